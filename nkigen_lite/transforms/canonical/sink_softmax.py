"""A softmax over scores with one extra column appended, the column then sliced off (gpt-oss's
sink logit: ``softmax(concat([s, sink], -1))[..., :N]``), becomes the same softmax without the
column: ``m = maximum(max(s), sink)``, ``E = exp(s - m)``, ``E / (ΣE + exp(sink - m))`` — the
form canonical/sink_attention.py matches.

Matched: ``slice(E / ΣE)`` (or ``E · 1/ΣE``) keeping every index but the last column,
``E = exp(C - max(C))``, ``C = concat([s, c], axis=-1)`` with ``c`` one column (a broadcast of
it is looked through), reductions over the last axis with keepdims, every intermediate used only
inside. The identity is exact in real arithmetic; in floating point the terms are the same ones
summed in another order.
"""

from __future__ import annotations

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ..match import def_op, make, replace
from .attention import _dead, _last_axis_reduce


def _normalised(p):
    """(E, ops) when ``p`` is E / ΣE or E · 1/ΣE (sums over the last axis, keepdims)."""
    op = def_op(p, (T.DivOp, T.MulOp))
    if op is None:
        return None
    if isinstance(op, T.DivOp):
        red = _last_axis_reduce(op.operand(1), "sum", op.operand(0))
        return (op.operand(0), [op, red]) if red is not None else None
    for e, den in (op.operands, list(reversed(op.operands))):
        rec = def_op(den, T.ReciprocalOp)
        red = _last_axis_reduce(rec.operand(0), "sum", e) if rec is not None else None
        if red is not None:
            return e, [op, rec, red]
    return None


class SinkColumnSoftmax(RewritePattern):
    """softmax(concat([s, c], -1))[..., :N] → exp(s - m) / (Σ exp(s - m) + exp(c - m)),
    m = maximum(max(s), c)"""

    root = T.SliceOp

    def match_and_rewrite(self, op, rw):
        src = op.operand(0)
        rank = src.type.rank
        keep = tuple(src.type.shape[:-1]) + (src.type.shape[-1] - 1,)
        if rank < 1 or tuple(op.attrs["starts"]) != (0,) * rank or tuple(op.attrs["stops"]) != keep:
            return False
        if set(op.attrs["strides"]) != {1}:
            return False
        found = _normalised(src)
        exp = def_op(found[0], T.ExpOp) if found is not None else None
        sub = def_op(exp.operand(0), T.SubOp) if exp is not None else None
        if sub is None:
            return False
        cat_v, mx = sub.operands
        cat = def_op(cat_v, T.ConcatOp)
        red = _last_axis_reduce(mx, "max", cat_v)
        if cat is None or red is None or cat.attrs["axis"] % rank != rank - 1 or len(cat.operands) != 2:
            return False
        s, col = cat.operands
        if col.type.shape[-1] != 1 or s.type != op.result.type or col.dtype is not s.dtype:
            return False
        inside = {op, exp, sub, cat, red, *found[1]}
        for x in inside - {op}:
            if any(u.op not in inside and not _dead(u.op) for r in x.results for u in r.uses):
                return False  # an intermediate is used elsewhere: it has to exist
        bc = def_op(col, T.BroadcastToOp)
        c = bc.operand(0) if bc is not None and bc.operand(0).type.rank == rank else col
        axes = {"axes": (rank - 1,), "keepdims": True}
        m = make(rw, T.MaximumOp, [make(rw, T.ReduceOp, [s], {**axes, "kind": "max"}), c])
        e = make(rw, T.ExpOp, [make(rw, T.SubOp, [s, m])])
        total = make(rw, T.ReduceOp, [e], {**axes, "kind": "sum"})
        den = make(rw, T.AddOp, [total, make(rw, T.ExpOp, [make(rw, T.SubOp, [c, m])])])
        return replace(rw, op, make(rw, T.DivOp, [e, den]))


SINK_SOFTMAX_PATTERNS = (SinkColumnSoftmax(),)
