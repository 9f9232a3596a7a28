"""Triangular mask constants become on-chip constructions.

A dense ``tensor.constant`` holding an ``np.triu`` / ``np.tril`` pattern (two values, one on the
elements with ``j - i >= k`` or ``j - i <= k`` of its last two axes, the other elsewhere; any
leading axes of extent 1) is replaced by ``where(iota(j) - iota(i) >= k, on, off)`` (or ``<=``),
which lowers to iota / compare / select on chip: the mask is never read from HBM. Masks of at
most ``MAX_FOLDED_ELEMENTS`` elements are left alone (constant folding would fold them back).
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import get_dtype
from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.types import TensorType
from ..match import full, make, replace
from .folding import MAX_FOLDED_ELEMENTS


def _triangle(a: np.ndarray):
    """(on value, off value, compare op class, k) when ``a`` (2-D) is a triangular pattern."""
    vals = np.unique(a)
    if len(vals) != 2 or (a.dtype.kind == "f" and np.isnan(vals).any()):
        return None
    n, m = a.shape
    d = np.arange(m)[None, :] - np.arange(n)[:, None]
    for on, off in ((vals[1], vals[0]), (vals[0], vals[1])):  # True (the larger) on first
        sel = a == on
        k_ge, k_le = int(d[sel].min()), int(d[sel].max())
        if np.array_equal(sel, d >= k_ge):
            return on, off, T.GreaterEqualOp, k_ge
        if np.array_equal(sel, d <= k_le):
            return on, off, T.LessEqualOp, k_le
    return None


class TriangularMaskOnChip(RewritePattern):
    """constant(triu/tril pattern of a, b) → where(iota(j) - iota(i) >= k (or <= k), a, b)"""

    root = T.ConstantOp

    def match_and_rewrite(self, op, rw):
        r = op.result
        shape = r.shape
        if len(shape) < 2 or any(s != 1 for s in shape[:-2]) or r.type.size <= MAX_FOLDED_ELEMENTS:
            return False
        arr = np.asarray(op.attrs["value"].array).reshape(shape[-2:])
        found = _triangle(arr)
        if found is None:
            return False
        on, off, cmp, k = found
        i32 = get_dtype("int32")
        idx = TensorType(tuple(shape), i32)
        rows = make(rw, T.IotaOp, [], {"axis": len(shape) - 2}, idx)
        cols = make(rw, T.IotaOp, [], {"axis": len(shape) - 1}, idx)
        diag = make(rw, T.SubOp, [cols, rows])
        cond = make(rw, cmp, [diag, full(rw, k, i32, shape)])
        dt = r.dtype
        if dt.is_bool and bool(on) and not bool(off):
            return replace(rw, op, cond)
        new = make(rw, T.WhereOp, [cond, full(rw, on.item(), dt, shape), full(rw, off.item(), dt, shape)])
        return replace(rw, op, new)


MASK_PATTERNS = (TriangularMaskOnChip(),)
