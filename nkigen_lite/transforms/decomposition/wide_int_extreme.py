"""Exact max / min reductions of integers wider than fp32's 24-bit significand (int32, uint32).

The engines reduce in fp32 (VectorE's tensor_reduce converts its operand to fp32), so a max of
int32 values beyond 2**24 comes back rounded, and everything built on it (argmax / argmin's
first index holding the extreme, topk's selection rounds, np.max / np.min) goes wrong. Each
value ``v`` is split by bitwise ands (raw bits, exact) into a high part ``v & -65536`` (the
multiple of 65536 at or below v: at most 16 significant bits, so exact in fp32, and in v's
order) and a low part ``v & 65535`` in [0, 65535]; ``v`` is their sum and orders as the pair
(high, low). The reduction is then two fp32-exact reductions: the extreme of the high parts,
and the extreme of the low parts among the elements whose high part equals it (the others take
a low part beyond [0, 65535]); the result is ``high | low`` (a bitwise or, exact).

Integers of at most 16 bits stay on the one-reduction path (fp32 holds them exactly), and so
do int32 values built to lie within 2**24 (``fits_fp32``: the index reductions of argmax /
argmin / topk's expansions, where(hit, iota, n)).
"""

from __future__ import annotations

from ...ir.dtypes import DType, float32
from ...tensor import ops as T
from ..match import replace
from .base import DecompositionPattern, Emitter

FP32_EXACT = 2**24
"""fp32 holds every integer of magnitude at most this."""
LOW_BITS = 16
"""Bits in the low part; the high part keeps 32 - 16 = 16 significant bits (fp32 holds 24)."""


def is_wide_int(dtype: DType) -> bool:
    """Whether fp32 (the engines' arithmetic) cannot hold every value of the integer ``dtype``."""
    return dtype.is_int and dtype.bits > 24


def fits_fp32(v, depth: int = 8) -> bool:
    """Whether every element of the integer value ``v`` is known to lie within +-2**24: an iota
    along an axis of at most 2**24, a constant within it, a cast from a narrower integer or
    bool, a where of such values (``depth`` bounds the walk)."""
    if not v.dtype.is_int or v.dtype.bits <= 24:
        return v.dtype.is_int or v.dtype.is_bool
    op = v.defining_op
    if op is None or depth == 0:
        return False
    if isinstance(op, T.IotaOp):
        return v.shape[op.attrs["axis"]] <= FP32_EXACT
    if isinstance(op, T.FullOp):
        return abs(op.attrs["value"]) <= FP32_EXACT
    if isinstance(op, T.CastOp):
        x = op.operand(0)
        return (x.dtype.is_int or x.dtype.is_bool) and fits_fp32(x, depth - 1)
    if isinstance(op, T.WhereOp):
        return all(fits_fp32(x, depth - 1) for x in op.operands[1:])
    return False


class WideIntExtreme(DecompositionPattern):
    """max / min(x, axes) of int32 / uint32 → the extreme of the high parts (x & -65536), then
    of the low parts (x & 65535) where the high part is extreme, both in fp32 (exact); result
    high | low"""

    root = T.ReduceOp

    def match_and_rewrite(self, op, rw):
        kind = op.attrs["kind"]
        x = op.operand(0)
        if kind not in ("max", "min") or not op.attrs["keepdims"] or not is_wide_int(x.dtype):
            return False
        if fits_fp32(x):  # one fp32 reduction is exact
            return False
        e = Emitter(rw)
        dt, axes = x.dtype, op.attrs["axes"]
        low_mask = (1 << LOW_BITS) - 1
        high_mask = -(1 << LOW_BITS) if dt.np_dtype.kind == "i" else (1 << dt.bits) - 1 - low_mask
        high = e.cast(e.bitwise_and(x, high_mask), float32)
        low = e.cast(e.bitwise_and(x, low_mask), float32)
        top = e.reduce(high, axes, kind)
        outside = -1.0 if kind == "max" else float(low_mask + 1)  # loses to every low part
        low_top = e.reduce(e.where(e.equal(high, top), low, outside), axes, kind)
        return replace(rw, op, e.bitwise_or(e.cast(top, dt), e.cast(low_top, dt)))
