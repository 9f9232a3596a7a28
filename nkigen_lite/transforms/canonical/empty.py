"""Canonicalization rules for empty tensors (a zero-size dim): no op computes on one.

- an op with an empty result → ``full(0)`` of that (empty) type;
- a reduction over an empty axis with a non-empty result → its identity: sum 0, prod 1,
  any False, all True, mean / var / std NaN (NumPy's answers; max / min of an empty axis are
  rejected when the op is built);
- a matmul with K = 0 → zeros;
- empty concat operands are dropped (the rest cast to the result dtype when it differs).

After these, an empty graph input has no user but the ``return``, so the lowering never sees
an empty tensor (NKI tensors need positive dims) and a graph with only empty outputs needs no
kernel at all.
"""

from __future__ import annotations

import math

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ..match import full, make, replace

_IDENTITY = {
    "sum": 0,
    "prod": 1,
    "any": False,
    "all": True,
    "mean": math.nan,
    "var": math.nan,
    "std": math.nan,
}


class FoldEmptyResult(RewritePattern):
    """f(…) with an empty result → full(0) (sources that are already ``full`` stay)"""

    root = T.TensorOp

    def match_and_rewrite(self, op, rw):
        if isinstance(op, T.FullOp) or len(op.results) != 1:
            return False
        r = op.result
        if r.type.size != 0:
            return False
        return replace(rw, op, full(rw, 0, r.dtype, r.shape))


class FoldEmptyOperand(RewritePattern):
    """reduce over an empty axis → its identity; K = 0 matmul → zeros; empty concat parts
    dropped"""

    root = (T.ReduceOp, T.MatmulOp, T.ConcatOp)

    def match_and_rewrite(self, op, rw):
        r = op.result
        if r.type.size == 0 or all(v.type.size for v in op.operands):
            return False
        if isinstance(op, T.ReduceOp):
            value = _IDENTITY.get(op.attrs["kind"])
            if value is None:
                return False
            return replace(rw, op, full(rw, value, r.dtype, r.shape))
        if isinstance(op, T.MatmulOp):
            return replace(rw, op, full(rw, 0, r.dtype, r.shape))
        keep = [v for v in op.operands if v.type.size]
        new = keep[0] if len(keep) == 1 else make(rw, T.ConcatOp, keep, dict(op.attrs))
        if new.type != r.type:
            new = make(rw, T.CastOp, [new], {"dtype": r.dtype})
        return replace(rw, op, new)


EMPTY_PATTERNS = (FoldEmptyResult(), FoldEmptyOperand())
