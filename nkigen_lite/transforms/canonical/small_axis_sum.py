"""A weighted sum over a short middle axis becomes a sum of its slices.

``sum(Y * w, axis=a)`` in f32 with ``Y`` (..., k, ..., H), ``a`` not the last axis,
``k <= MAX_TERMS``, a long last axis (``H >= MIN_ROW``), ``w`` broadcast along it and ``Y`` read
from HBM (a kernel input, or a matmul or row gather, through reshapes and casts) — the MoE
combine: each token's k expert outputs weighted by its routing weights, ``(t, k, H) * (t, k, 1)``
summed over k — becomes ``Y[.., 0:1, ..] * w[.., 0:1, ..] + … + Y[.., k-1:k, ..] * w[.., k-1:k, ..]``
(keepdims, then the reshape dropping the axis when the sum did). A fusion group reduces along
trailing free dims only, so the sum over the middle axis would read ``Y`` with that axis last —
a transposing load moving one element per DMA descriptor; the slices are strided views whose
rows stay contiguous. The same terms are added, left to right, in f32 (only f32: a narrower
sum would round after every add instead of once).
"""

from __future__ import annotations

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.composites_gathered_matmul import GatheredMatmulOp
from ..match import def_op, make, replace

MAX_TERMS = 16
MIN_ROW = 128


def _slice(rw, v, axis: int, j: int):
    shape = v.type.shape
    if shape[axis] == 1:
        return v  # broadcast along the axis
    attrs = {
        "starts": tuple(j if d == axis else 0 for d in range(len(shape))),
        "stops": tuple(j + 1 if d == axis else n for d, n in enumerate(shape)),
        "strides": (1,) * len(shape),
    }
    return make(rw, T.SliceOp, [v], attrs)


def _read_from_hbm(v) -> bool:
    """True when ``v`` (through reshapes and casts) is a kernel input or the result of an op
    lowered on its own into HBM (a matmul, a row gather): what the sum's group must load."""
    while isinstance(v.defining_op, (T.ReshapeOp, T.CastOp)):
        v = v.defining_op.operand(0)
    op = v.defining_op
    return op is None or isinstance(op, (T.MatmulOp, T.GatherRowsOp, GatheredMatmulOp))


class SliceShortWeightedSum(RewritePattern):
    """sum(Y * w, axis=a) → Σ_j Y[a=j] * w[a=j]   (a short middle axis, w broadcast along the last)"""

    root = T.ReduceOp

    def match_and_rewrite(self, op, rw):
        if op.attrs["kind"] != "sum" or len(op.attrs["axes"]) != 1:
            return False
        x = op.operand(0)
        rank = x.type.rank
        axis = op.attrs["axes"][0] % max(rank, 1)
        if rank < 2 or axis == rank - 1 or x.type.shape[-1] < MIN_ROW:
            return False
        k = x.type.shape[axis]
        if not 2 <= k <= MAX_TERMS or x.dtype.name != "f32":
            return False
        mul = def_op(x, T.MulOp)
        if mul is None or len(x.uses) != 1:
            return False
        y, w = mul.operands
        if y.type.rank != rank or w.type.rank != rank:
            return False
        if w.type.shape[-1] != 1:
            y, w = w, y
        if w.type.shape[-1] != 1 or y.type.shape != x.type.shape or not _read_from_hbm(y):
            return False
        total = None
        for j in range(k):
            term = make(rw, T.MulOp, [_slice(rw, y, axis, j), _slice(rw, w, axis, j)])
            total = term if total is None else make(rw, T.AddOp, [total, term])
        if total.type != op.result.type:
            total = make(rw, T.ReshapeOp, [total], {"shape": tuple(op.result.type.shape)})
        return replace(rw, op, total)


SMALL_AXIS_SUM_PATTERNS = (SliceShortWeightedSum(),)
