"""Causal (optionally sliding-window) grouped-query attention with per-head sink logits — the
gpt-oss form — becomes one ``tensor.sink_attention`` (lowered by lower/sink_attention.py: K and
V once per KV head, masks on chip, skipped key chunks, no HBM intermediates).

Matched, with every intermediate used only inside the pattern (reshapes and float casts between
the steps are looked through):
``O = P @ V`` with ``P = E / (ΣE + exp(sink - m))`` (or ``E · 1/(...)``), ``E = exp(Y - m)``,
``m = maximum(max(Y), sink)``, ``Y = where(j <= i, S·c, -inf)`` and optionally
``where(i - j < W, ·, -inf)`` (``i``, ``j`` iotas over the score rows and columns),
``S = Q @ Kᵀ``; ``sink`` a reshape of a 1-D f32 input with one logit per query head. Q, K, V are
reshapes / exact widening casts of sources of one dtype (query head ``h`` reading KV head
``h // (H / G)``, the layout a reshape of ``(H, M, D)`` into ``(G, R·M, D)`` gives) and the
result is in that dtype. The op computes the model's function in fp32; the graph's roundings of
the bf16 scores and of P happen (or not) inside the kernel, within bf16 tolerance.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.composites_sink_attention import SinkAttentionOp
from ..lower.sink_attention_dispatch import supported
from ..match import def_op, make, replace, splat_value
from .attention import _dead, _last_axis_reduce, _scale
from .grouped_attention import _key_source, _source


def _through(v, ops, casts: bool = True):
    """The value ``v`` is reshapes (and float casts) of; the looked-through ops go to ``ops``."""
    while True:
        op = v.defining_op
        if isinstance(op, T.ReshapeOp) or (
            casts and isinstance(op, T.CastOp) and op.operand(0).dtype.is_float
        ):
            ops.append(op)
            v = op.operand(0)
        else:
            return v


def _iota_axes(a, b):
    """(axis of a, axis of b) counted from the right when both are iotas, else None."""
    ia, ib = def_op(a, T.IotaOp), def_op(b, T.IotaOp)
    if ia is None or ib is None:
        return None
    return ia.result.type.rank - ia.attrs["axis"] % ia.result.type.rank, ib.result.type.rank - ib.attrs[
        "axis"
    ] % ib.result.type.rank


def _constant_condition(const):
    """("causal", None) or ("window", W) when the bool constant is ``j <= i`` or ``i - j < W``
    (what canonicalize folds small iota masks into)."""
    a = np.asarray(const.attrs["value"].array)
    a = a.reshape(a.shape[-2:]) if a.ndim >= 2 else a
    if a.ndim != 2 or a.dtype != bool:
        return None
    i, j = np.indices(a.shape)
    if np.array_equal(a, j <= i):
        return "causal", None
    w = int(a[:, 0].sum())
    if 0 < w < a.shape[0] and np.array_equal(a, i - j < w):
        return "window", w
    return None


def _condition(cond):
    """("causal", None) for ``j <= i`` / ``i >= j``, ("window", W) for ``i - j < W`` /
    ``i - j <= W - 1``; i the row iota (second axis from the right), j the column iota; or the
    same masks folded into a bool constant."""
    const = def_op(cond, T.ConstantOp)
    if const is not None:
        return _constant_condition(const)
    cmp = def_op(cond, (T.LessEqualOp, T.GreaterEqualOp, T.LessOp))
    if cmp is None:
        return None
    a, b = cmp.operands
    axes = _iota_axes(a, b)
    if axes is not None:
        if (isinstance(cmp, T.LessEqualOp) and axes == (1, 2)) or (
            isinstance(cmp, T.GreaterEqualOp) and axes == (2, 1)
        ):
            return "causal", None
        return None
    sub = def_op(a, T.SubOp)
    w = splat_value(b)
    if sub is None or not isinstance(w, int) or isinstance(w, bool) or _iota_axes(*sub.operands) != (2, 1):
        return None
    if isinstance(cmp, T.LessOp):
        return ("window", w) if w > 0 else None
    if isinstance(cmp, T.LessEqualOp):
        return ("window", w + 1) if w >= 0 else None
    return None


def _masked(y):
    """(scores, causal, window, ops) when ``y`` is nested ``where(cond, x, -inf)``."""
    causal, window, ops = False, 0, []
    while True:
        op = def_op(y, T.WhereOp)
        if op is None or splat_value(op.operand(2)) != -math.inf:
            return y, causal, window, ops
        shape = op.operand(0).type.shape
        found = None
        if shape[-2:] == y.type.shape[-2:] and set(shape[:-2]) <= {1}:
            found = _condition(op.operand(0))
        if found is None:
            return y, causal, window, ops
        kind, w = found
        if kind == "causal":
            causal = True
        else:
            window = w if not window else min(window, w)
        ops.append(op)
        y = op.operand(1)


def _sink_of(x, heads_shape):
    """The 1-D f32 sinks ``x`` is a reshape of (one logit per query head), else None."""
    src = x
    while isinstance(src.defining_op, T.ReshapeOp):
        src = src.defining_op.operand(0)
    if src.type.rank != 1 or src.dtype.name != "f32" or x.type.shape[-2:] != (1, 1):
        return None
    if math.prod(x.type.shape[:-2]) != src.type.shape[0] or x.type.shape[:-2] != heads_shape:
        return None
    return src


def _normalised(pv, inside):
    """(E, denominator) when ``pv``'s left operand is (casts / reshapes of) E / den or E · 1/den."""
    op = def_op(_through(pv.operand(0), inside), (T.DivOp, T.MulOp))
    if op is None:
        return None
    inside.append(op)
    if isinstance(op, T.DivOp):
        return op.operands
    for e, den in (op.operands, list(reversed(op.operands))):
        rec = def_op(den, T.ReciprocalOp)
        if rec is not None:
            inside.append(rec)
            return e, rec.operand(0)
    return None


def _softmax(e, den, inside):
    """(Y, sink logits value) when E = exp(Y - m), m = maximum(max(Y), sink) and
    den = ΣE + exp(sink - m)."""
    exp, add = def_op(e, T.ExpOp), def_op(den, T.AddOp)
    sub = def_op(exp.operand(0), T.SubOp) if exp is not None else None
    mxop = def_op(sub.operand(1), T.MaximumOp) if sub is not None and add is not None else None
    if mxop is None:
        return None
    y, mx = sub.operands
    a, b = mxop.operands
    found = [
        (r, x) for r, x in ((_last_axis_reduce(a, "max", y), b), (_last_axis_reduce(b, "max", y), a)) if r
    ]
    if not found:
        return None
    red, sink4 = found[0]
    for total, es in (add.operands, reversed(add.operands)):
        tot = _last_axis_reduce(total, "sum", e)
        es_exp = def_op(es, T.ExpOp)
        es_sub = def_op(es_exp.operand(0), T.SubOp) if es_exp is not None else None
        if tot is not None and es_sub is not None and tuple(es_sub.operands) == (sink4, mx):
            inside += [exp, add, sub, mxop, red, tot, es_exp, es_sub]
            return y, sink4
    return None


def _match(pv):
    """(q, k, v, sinks, scale, window, Q Kᵀ, ops inside) when matmul ``pv`` is the sink attention."""
    inside = [pv]
    found = _normalised(pv, inside)
    found = _softmax(*found, inside) if found is not None else None
    if found is None:
        return None
    y, sink4 = found
    scores, causal, window, mask_ops = _masked(y)
    if not causal:
        return None
    inside += mask_ops
    s, c, mul = _scale(_through(scores, inside, casts=False))
    if mul is not None:
        inside.append(mul)
    qk = def_op(_through(s, inside), T.MatmulOp)
    k = _key_source(qk.operand(1)) if qk is not None else None
    sinks = _sink_of(sink4, y.type.shape[:-2])
    if k is None or sinks is None:
        return None
    inside.append(qk)
    return _source(qk.operand(0)), k, _source(pv.operand(1)), sinks, c, window, qk, inside


class SinkAttentionToOp(RewritePattern):
    """P V with P the sink softmax of c · Q Kᵀ under a causal (and window) mask →
    sink_attention(Q, K, V, sinks, scale=c, window=W)"""

    root = T.MatmulOp

    def match_and_rewrite(self, op, rw):
        found = _match(op)
        if found is None:
            return False
        q, k, v, sinks, c, window, qk, inside = found
        if not (q.dtype is k.dtype is v.dtype) or op.result.dtype is not q.dtype:
            return False
        if q.type.rank != 3 or k.type.rank != 3 or v.type.rank != 3:
            return False
        (h, m, d), (g, n, _), dv = q.type.shape, k.type.shape, v.type.shape[-1]
        # query head h reads KV head h // (H / G): Q reshaped (H, M, D) -> (G, R·M, D), or as is
        if g == 0 or h % g or qk.operand(0).type.shape not in ((g, h // g * m, d), (h, m, d)):
            return False
        if (
            qk.result.type.shape[-2:] != (qk.operand(0).type.shape[-2], n)
            or op.result.type.size != h * m * dv
        ):
            return False
        # a bf16 graph rounds the scores (a bf16 Q Kᵀ) and P (cast for a bf16 P V); f32 neither
        rounded = qk.result.dtype is q.dtype and q.dtype.name != "f32"
        if rounded != (op.operand(0).dtype is q.dtype and q.dtype.name != "f32"):
            return False
        attrs = {"scale": c, "window": int(window), "rounded": rounded}
        if not supported(q.type.shape, k.type.shape, v.type.shape, sinks.type.shape, q.dtype, attrs):
            return False
        inside = set(inside)
        for x in inside - {op}:
            if any(u.op not in inside and not _dead(u.op) for r in x.results for u in r.uses):
                return False  # an intermediate is used elsewhere: it has to exist
        out = make(rw, SinkAttentionOp, [q, k, v, sinks], attrs)
        if out.type.shape != op.result.type.shape:
            out = make(rw, T.ReshapeOp, [out], {"shape": op.result.type.shape})
        return replace(rw, op, out)


SINK_ATTENTION_PATTERNS = (SinkAttentionToOp(),)
