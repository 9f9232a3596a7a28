"""Triangular mask constants become on-chip constructions.

A dense ``tensor.constant`` holding an ``np.triu`` / ``np.tril`` pattern (two values, one on the
elements with ``j - i >= k`` or ``j - i <= k`` of its last two axes, the other elsewhere; any
leading axes of extent 1) is replaced by ``where(iota(j) - iota(i) >= k, on, off)`` (or ``<=``);
a sliding-window band (``on`` exactly where ``lo <= j - i <= hi``) by
``where(d >= lo, where(d <= hi, on, off), off)`` with ``d = iota(j) - iota(i)``. Both lower to
one ``affine_select`` per tile (lower/affine_mask.py): the mask is never read from HBM. Masks of at
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


def _band(a: np.ndarray):
    """(on value, off value, lo, hi) when ``a`` (2-D) holds ``on`` exactly where
    ``lo <= j - i <= hi`` (a sliding-window band, neither bound trivial) and ``off`` elsewhere."""
    vals = np.unique(a)
    if len(vals) != 2 or (a.dtype.kind == "f" and np.isnan(vals).any()):
        return None
    n, m = a.shape
    d = np.arange(m)[None, :] - np.arange(n)[:, None]
    for on, off in ((vals[1], vals[0]), (vals[0], vals[1])):
        sel = a == on
        if not sel.any():
            continue
        lo, hi = int(d[sel].min()), int(d[sel].max())
        if lo > d.min() and hi < d.max() and np.array_equal(sel, (d >= lo) & (d <= hi)):
            return on, off, lo, hi
    return None


class TriangularMaskOnChip(RewritePattern):
    """constant(triu/tril pattern of a, b) → where(iota(j) - iota(i) >= k (or <= k), a, b);
    constant(band lo <= j - i <= hi of a, b) → where(d >= lo, where(d <= hi, a, b), b)"""

    root = T.ConstantOp

    def match_and_rewrite(self, op, rw):
        r = op.result
        shape = r.shape
        if len(shape) < 2 or any(s != 1 for s in shape[:-2]) or r.type.size <= MAX_FOLDED_ELEMENTS:
            return False
        arr = np.asarray(op.attrs["value"].array).reshape(shape[-2:])
        found = _triangle(arr)
        band = _band(arr) if found is None else None
        if found is None and band is None:
            return False
        i32 = get_dtype("int32")
        idx = TensorType(tuple(shape), i32)
        rows = make(rw, T.IotaOp, [], {"axis": len(shape) - 2}, idx)
        cols = make(rw, T.IotaOp, [], {"axis": len(shape) - 1}, idx)
        diag = make(rw, T.SubOp, [cols, rows])
        dt = r.dtype
        if band is not None:  # where(d >= lo, where(d <= hi, on, off), off)
            on, off, lo, hi = band
            upper = make(rw, T.LessEqualOp, [diag, full(rw, hi, i32, shape)])
            lower = make(rw, T.GreaterEqualOp, [diag, full(rw, lo, i32, shape)])
            if dt.is_bool:
                return replace(
                    rw,
                    op,
                    make(rw, T.LogicalAndOp, [lower, upper])
                    if bool(on)
                    else make(rw, T.LogicalNotOp, [make(rw, T.LogicalAndOp, [lower, upper])]),
                )
            off_v = full(rw, off.item(), dt, shape)
            inner = make(rw, T.WhereOp, [upper, full(rw, on.item(), dt, shape), off_v])
            return replace(rw, op, make(rw, T.WhereOp, [lower, inner, off_v]))
        on, off, cmp, k = found
        cond = make(rw, cmp, [diag, full(rw, k, i32, shape)])
        if dt.is_bool and bool(on) and not bool(off):
            return replace(rw, op, cond)
        new = make(rw, T.WhereOp, [cond, full(rw, on.item(), dt, shape), full(rw, off.item(), dt, shape)])
        return replace(rw, op, new)


MASK_PATTERNS = (TriangularMaskOnChip(),)
