"""Which kernel lowers a ``tensor.sink_attention``: sink_attention.py's up to ``MAX_KEYS`` (512)
keys, sink_attention_long.py's online softmax beyond; the shapes neither takes are refused with
one ``BuildError`` naming the op, the shapes and the rule broken (with the numbers). Also the
``supported`` test canonical/sink_attention.py asks before forming the op."""

from __future__ import annotations

from ...ir.dtypes import get_dtype
from ...ir.errors import BuildError
from ...tensor.composites_sink_attention import SinkAttentionOp
from .custom import register_composite_lowering
from .sink_attention import DTYPES, F32, MAX_HEAD_DIM, MAX_KEYS, MAX_UNITS, MAX_VALUE_DIM, P, _Kernel
from .sink_attention_long import long_limit_message, long_sink_attention_body


def refusal(q_shape, k_shape, v_shape, s_shape, dtype, attrs) -> str | None:
    """Why the kernels cannot take the shapes (the rule broken, with the numbers), or None. They
    take q (H, M, D), k (G, N, D), v (G, N, Dv), sinks (H,), G dividing H, M == N, D <= 128,
    Dv <= 511, a bf16 / f16 / f32 dtype and a window >= 0; up to ``MAX_KEYS`` keys at most
    ``MAX_UNITS`` query heads x 128-row tiles (this kernel), beyond that the limits of
    sink_attention_long.py (K and V resident per KV head, the loop body's size)."""
    qs, ks, vs, ss = (tuple(s) for s in (q_shape, k_shape, v_shape, s_shape))
    if not (len(qs) == len(ks) == len(vs) == 3 and len(ss) == 1) or min(qs + ks + vs) <= 0:
        return "operand ranks or empty dims"
    (h, m, d), (g, n, dk), (gv, nv, dv) = qs, ks, vs
    if ss != (h,) or h % g or (gv, nv) != (g, n) or dk != d or m != n:
        return "operand shapes do not match"
    window = int(attrs.get("window", 0))
    if d > MAX_HEAD_DIM or dv > MAX_VALUE_DIM or window < 0:
        return f"D {d}, Dv {dv} or window {window} out of range"
    if getattr(dtype, "name", dtype) not in DTYPES:
        return f"dtype {getattr(dtype, 'name', dtype)}"
    if n <= MAX_KEYS:
        units = h * -(-m // P)
        return None if units <= MAX_UNITS else f"{units} query heads x 128-row tiles > {MAX_UNITS}"
    itemsize = get_dtype(getattr(dtype, "name", dtype)).itemsize
    return long_limit_message(m, n, d, dv, itemsize, window, h // g)


def supported(q_shape, k_shape, v_shape, s_shape, dtype, attrs) -> bool:
    """Shapes the kernels handle (``refusal`` gives none)."""
    return refusal(q_shape, k_shape, v_shape, s_shape, dtype, attrs) is None


def sink_attention_body(types, attrs):
    """The NKI kernel of one ``tensor.sink_attention`` with operand types ``types``: sink_attention.py's
    up to ``MAX_KEYS`` keys, sink_attention_long.py's beyond."""
    qt, kt, vt, st = types
    why = refusal(qt.shape, kt.shape, vt.shape, st.shape, qt.dtype, attrs)
    if why is None and not (qt.dtype is kt.dtype is vt.dtype and st.dtype is F32):
        why = "operand dtypes differ"
    if why is not None:
        shapes = ", ".join(f"{n} {t}" for n, t in zip(("q", "k", "v", "sinks"), types))
        raise BuildError(
            f"tensor.sink_attention ({shapes}, window {int(attrs.get('window', 0))}): {why}; the kernel "
            f"takes q (H, M, D), k (G, N, D), v (G, N, Dv) of one dtype ({'/'.join(DTYPES)}) and f32 "
            f"sinks (H,), G dividing H, M == N, D <= {MAX_HEAD_DIM}, Dv <= {MAX_VALUE_DIM}, window "
            f">= 0; up to {MAX_KEYS} keys at most {MAX_UNITS} query heads x 128-row query tiles, "
            "beyond that K, Kᵀ and V of a KV head resident in SBUF and a bounded loop body"
        )
    if kt.shape[1] > MAX_KEYS:
        return long_sink_attention_body(types, attrs)
    return _Kernel(types, attrs).build()


register_composite_lowering(SinkAttentionOp, sink_attention_body)
