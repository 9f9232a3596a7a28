"""Decompositions of the indexed ops onto gather_rows / scatter_rows (indirect DMA) and
elementwise integer work:

- ``one_hot(ids, depth)`` → ``cast(ids[..., None] == iota(depth))``;
- ``take_along_axis(x, idx, axis)`` → ``gather_rows(reshape(x, (N, 1)), flat)`` with ``flat``
  the element's row-major index (negative indices wrapped as NumPy does);
- ``dynamic_slice`` / ``dynamic_update_slice`` → gather / scatter of rows of ``x`` viewed as
  ``(N, R)``, where the trailing dims the window covers whole at a constant start 0 form the
  rows (a KV-cache update ``cache[:, pos] = k`` moves one row per head);
- ``scatter_rows`` whose ids may repeat → every id's rows replaced by those of its *last*
  occurrence (a ``K x K`` compare), so repeated ids write identical rows and the hardware's
  unspecified write order cannot change the result (``unique = true`` afterwards).

An index outside its range becomes a row index of at least ``N`` (past the table), so the gather's
bounds check rejects it in the interpreters (the hardware DMA raises in its default
``oob_mode.error``) instead of reading a wrong element.
"""

from __future__ import annotations

import math

from ...ir.dtypes import int32
from ...tensor import ops as T
from ...tensor.types import TensorType
from ..match import make, replace, splat_value
from .base import DecompositionPattern, Emitter


def _iota(e: Emitter, shape, axis: int):
    return make(e.rw, T.IotaOp, [], {"axis": axis}, TensorType(tuple(shape), int32))


def _as_i32(e: Emitter, v):
    return e.cast(v, int32)


def _rows_plan(x_shape, sizes, starts):
    """(t, grid, N, R): dims from t on are whole with a constant start 0 and form the rows."""
    t = len(x_shape)
    while t > 0 and sizes[t - 1] == x_shape[t - 1] and splat_value(starts[t - 1]) == 0:
        t -= 1
    n_rows = math.prod(x_shape[:t])
    return t, tuple(sizes[:t]), n_rows, math.prod(x_shape[t:])


def _window_ids(e: Emitter, x_shape, sizes, starts, t: int, grid, n_rows: int):
    """Row index of every window row over ``grid``; at least ``n_rows`` (out of range) when a
    start does not fit. Built as a sum of one 1-D vector per dim of more than one row (size-1
    dims fold their constant term into the first vector), combined one dim at a time as
    ``(n, 1) + (1, m)`` and reshaped to ``grid``: only 1-D and 2-D fusion groups (a 0-d or
    size-1 broadcast inside a rank-3 group trips the lowering, docs/lowering.md known limits)."""
    const, vecs = None, []
    for d in range(t):
        stride = math.prod(x_shape[d + 1 : t])
        s = _as_i32(e, starts[d])
        ok = e.logical_and(e.greater_equal(s, 0), e.less_equal(s, x_shape[d] - sizes[d]))
        if grid[d] == 1:
            term = e.where(ok, e.mul(s, stride) if stride != 1 else s, n_rows)
            const = term if const is None else e.add(const, term)
            continue
        v = e.add(_iota(e, (grid[d],), 0), s)
        vecs.append(e.where(ok, e.mul(v, stride) if stride != 1 else v, n_rows))
    if not vecs:
        return e.reshape(const, grid)
    if const is not None:
        vecs[0] = e.add(vecs[0], const)
    ids = vecs[0]
    for v in vecs[1:]:  # (n, 1) + (1, m) -> n * m rows, row-major: 2-D groups only
        n, m = ids.type.size, v.type.size
        ids = e.reshape(e.add(e.reshape(ids, (n, 1)), e.reshape(v, (1, m))), (n * m,))
    return e.reshape(ids, grid)


class OneHotCompare(DecompositionPattern):
    """one_hot(ids, depth, dtype) → cast(ids[..., None] == iota(depth), dtype)"""

    root = T.OneHotOp

    def match_and_rewrite(self, op, rw):
        e = Emitter(rw)
        ids = _as_i32(e, op.operand(0))
        depth = op.attrs["depth"]
        col = e.reshape(ids, ids.shape + (1,))
        ks = _iota(e, (1,) * ids.ndim + (depth,), ids.ndim)
        return replace(rw, op, e.cast(e.equal(col, ks), op.attrs["dtype"]))


class TakeAlongAxisGather(DecompositionPattern):
    """take_along_axis(x, idx, axis) → gather_rows(reshape(x, (N, 1)), flat index)

    The index arithmetic keeps every int32 add provably in range (one instruction each, no
    16-bit limbs, lower/wide_int_arith.py): ``c = clip(idx, -n, n - 1)`` equals an index in
    range, ``w = c + n * (idx < 0)`` is NumPy's wrapped index in ``[0, n)``, and an index out of
    range (``c != idx``) adds ``2 * size`` to the flat index, past the table: the gather's
    bounds check rejects it. Tables of more than ``(2**31 - 1) / 3`` elements keep a ``where`` with an
    unbounded add instead."""

    root = T.TakeAlongAxisOp

    def match_and_rewrite(self, op, rw):
        e = Emitter(rw)
        x, axis = op.operand(0), op.attrs["axis"]
        out = op.result.shape
        n, total = x.shape[axis], x.type.size
        idx = _as_i32(e, op.operand(1))
        bounded = 3 * total < 2**31  # flat + 2 * size <= 3 * size - 1
        if bounded:
            c = e.minimum(e.maximum(idx, -n), n - 1)
            wrapped = e.add(c, e.mul(e.cast(e.less(idx, 0), int32), n))  # c < 0 iff idx < 0
            flat = e.mul(e.cast(e.not_equal(c, idx), int32), 2 * total)
        else:
            ok = e.logical_and(e.greater_equal(idx, -n), e.less(idx, n))
            wrapped = e.where(e.less(idx, 0), e.add(idx, n), idx)
            flat = None
        for d in range(x.ndim):
            stride = math.prod(x.shape[d + 1 :])
            if d == axis:
                c = wrapped
            elif x.shape[d] == 1:
                continue
            else:
                c = _iota(e, [out[k] if k == d else 1 for k in range(len(out))], d)  # broadcast
            term = e.mul(c, stride) if stride != 1 else c
            flat = term if flat is None else e.add(flat, term)
        if not bounded:
            flat = e.where(ok, flat, total)
        flat = e.broadcast_to(flat, out)
        table = e.reshape(x, (total, 1))
        g = make(rw, T.GatherRowsOp, [table, flat])
        return replace(rw, op, e.reshape(g, out))


class DynamicSliceGather(DecompositionPattern):
    """dynamic_slice(x, starts, sizes) → gather_rows(reshape(x, (N, R)), window row ids)"""

    root = T.DynamicSliceOp

    def match_and_rewrite(self, op, rw):
        e = Emitter(rw)
        x, starts, sizes = op.operand(0), op.operands[1:], op.attrs["sizes"]
        t, grid, n_rows, row = _rows_plan(x.shape, sizes, starts)
        if t == 0:
            return replace(rw, op, x)
        ids = _window_ids(e, x.shape, sizes, starts, t, grid, n_rows)
        g = make(rw, T.GatherRowsOp, [e.reshape(x, (n_rows, row)), ids])
        return replace(rw, op, e.reshape(g, op.result.shape))


class DynamicUpdateSliceScatter(DecompositionPattern):
    """dynamic_update_slice(x, u, starts) → scatter_rows(reshape(x, (N, R)), ids, rows of u)"""

    root = T.DynamicUpdateSliceOp

    def match_and_rewrite(self, op, rw):
        e = Emitter(rw)
        x, upd, starts = op.operand(0), op.operand(1), op.operands[2:]
        sizes = upd.shape
        t, grid, n_rows, row = _rows_plan(x.shape, sizes, starts)
        if t == 0:
            return replace(rw, op, upd)
        ids = _window_ids(e, x.shape, sizes, starts, t, grid, n_rows)
        rows = e.reshape(upd, grid + (row,))
        s = make(rw, T.ScatterRowsOp, [e.reshape(x, (n_rows, row)), ids, rows], {"unique": True})
        return replace(rw, op, e.reshape(s, x.shape))


class ScatterRowsLastWins(DecompositionPattern):
    """scatter_rows(dst, ids, rows) → scatter_rows(dst, ids, rows[last occurrence of ids], unique)"""

    root = T.ScatterRowsOp

    def match_and_rewrite(self, op, rw):
        if op.attrs["unique"]:
            return False
        dst, ids, rows = op.operands
        k = ids.type.size
        e = Emitter(rw)
        if k <= 1:
            new = make(rw, T.ScatterRowsOp, [dst, ids, rows], {"unique": True})
            return replace(rw, op, new)
        row = math.prod(dst.shape[1:])
        flat = e.reshape(_as_i32(e, ids), (k,))
        same = e.equal(e.reshape(flat, (k, 1)), e.reshape(flat, (1, k)))
        last = e.reduce(e.where(same, _iota(e, (k, k), 1), -1), (1,), "max")
        picked = make(rw, T.GatherRowsOp, [e.reshape(rows, (k, row)), e.reshape(last, (k,))])
        new_rows = e.reshape(picked, rows.shape)
        new = make(rw, T.ScatterRowsOp, [dst, ids, new_rows], {"unique": True})
        return replace(rw, op, new)


INDEXED_PATTERNS = (
    OneHotCompare,
    TakeAlongAxisGather,
    DynamicSliceGather,
    DynamicUpdateSliceScatter,
    ScatterRowsLastWins,
)
