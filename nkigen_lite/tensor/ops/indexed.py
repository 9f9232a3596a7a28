"""Indexed tensor ops (values chosen by runtime integer tensors): gather_rows, scatter_rows,
take_along_axis, one_hot, dynamic_slice, dynamic_update_slice.

Indices are never clamped or wrapped silently: an index outside its dimension raises
``IndexError`` from the reference (the interpreters turn it into one ``nk.IndexOutOfRange``,
an ``InterpretError`` and an ``IndexError``, naming the op, the index value, its position, the
axis and its size; an index that is a graph input is checked before any run path starts, in
the user's terms: tensor/index_bounds.py). ``take_along_axis`` alone accepts NumPy's negative
indices (``-n <= i < n``); ``one_hot`` gives an all-zero row for an id outside
``[0, depth)``, as ``jax.nn.one_hot`` does (it selects no memory).

gather_rows and scatter_rows run natively (indirect DMA, transforms/lower/indexed.py); the
others are rewritten into them (or into compares) by decompose (decomposition/indexed.py).
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import BOOL, DTYPE, INT, INT_TUPLE, Attr
from ...ir.errors import BuildError
from ...ir.traits import Pure
from ..types import TensorType
from .base import Needs, TensorOp, tensor_types

INDEX_DTYPES = ("int32", "uint32")
DECOMPOSED = Needs("indexed", None)  # no instruction: decompose rewrites it onto gather/scatter rows


def _index_type(op: str, what: str, t: TensorType) -> None:
    if t.dtype.numpy_name not in INDEX_DTYPES:
        raise BuildError(f"{op}: {what} must be int32 or uint32, got {t.dtype.numpy_name}")


def _starts(op: str, types, rank: int) -> None:
    if len(types) != rank:
        raise BuildError(f"{op}: needs {rank} start indices (one per dim), got {len(types)}")
    for d, t in enumerate(types):
        if t.rank != 0 or t.dtype.numpy_name not in INDEX_DTYPES:
            raise BuildError(f"{op}: start {d} must be a 0-d int32 or uint32 tensor, got {t}")


def check_rows(op: str, ids: np.ndarray, n: int) -> np.ndarray:
    """``ids`` as int64, raising IndexError naming the first id outside ``[0, n)``."""
    i = np.asarray(ids).astype(np.int64)
    bad = (i < 0) | (i >= n)
    if bad.any():
        pos = tuple(int(k) for k in np.argwhere(bad)[0])
        raise IndexError(
            f"{op}: index {int(i[pos])} is out of bounds for axis 0 with size {n} (at position "
            f"{list(pos)} of the ids; allowed [0, {n}))"
        )
    return i


def gather_rows(table, ids):
    """``table[ids]`` for ids in ``[0, len(table))``."""
    return table[check_rows("tensor.gather_rows", ids, table.shape[0])]


def scatter_rows(dst, ids, rows):
    """A copy of ``dst`` with row ``ids[k]`` set to ``rows[k]`` (the last k wins for a repeated id)."""
    i = check_rows("tensor.scatter_rows", ids, dst.shape[0]).reshape(-1)
    out = np.array(dst, copy=True)
    flat_rows = np.reshape(rows, (i.size,) + tuple(dst.shape[1:]))
    rev = i[::-1]
    _, first_in_rev = np.unique(rev, return_index=True)
    last = i.size - 1 - first_in_rev  # position of each distinct id's last occurrence
    out[i[last]] = flat_rows[last]
    return out


def take_along_axis(x, idx, axis):
    """np.take_along_axis for indices in ``[-n, n)`` (IndexError otherwise)."""
    n = x.shape[axis]
    i = np.asarray(idx).astype(np.int64)
    bad = (i < -n) | (i >= n)
    if bad.any():
        pos = tuple(int(k) for k in np.argwhere(bad)[0])
        raise IndexError(
            f"tensor.take_along_axis: index {int(i[pos])} is out of bounds for axis {axis} with size "
            f"{n} (at position {list(pos)} of the indices; allowed [-{n}, {n}))"
        )
    shape = list(np.broadcast_shapes(i.shape, tuple(1 if d == axis else s for d, s in enumerate(x.shape))))
    shape[axis] = i.shape[axis]
    xs = list(shape)
    xs[axis] = n
    return np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(i, shape), axis)


def one_hot(ids, depth, dtype):
    """``ids[..., None] == arange(depth)`` as ``dtype``."""
    return (np.asarray(ids).astype(np.int64)[..., None] == np.arange(depth)).astype(dtype)


def _check_window(op: str, starts, sizes, shape) -> list[int]:
    out = []
    for d, (s, size, n) in enumerate(zip(starts, sizes, shape)):
        s = int(np.asarray(s))
        if not 0 <= s <= n - size:
            raise IndexError(
                f"{op}: start {s} is out of bounds for axis {d} with size {n}: a window of {size} "
                f"needs a start in [0, {n - size}]"
            )
        out.append(s)
    return out


def dynamic_slice(x, *starts, sizes):
    """``x[s0:s0+n0, s1:s1+n1, ...]`` for runtime starts (the window must fit)."""
    s = _check_window("tensor.dynamic_slice", starts, sizes, x.shape)
    return x[tuple(slice(a, a + n) for a, n in zip(s, sizes))]


def dynamic_update_slice(x, update, *starts):
    """A copy of ``x`` with the window at runtime ``starts`` replaced by ``update``."""
    s = _check_window("tensor.dynamic_update_slice", starts, update.shape, x.shape)
    out = np.array(x, copy=True)
    out[tuple(slice(a, a + n) for a, n in zip(s, update.shape))] = update
    return out


class DecomposedIndexedOp(TensorOp):
    """Base of the indexed ops decompose rewrites onto gather_rows / scatter_rows."""

    needs = DECOMPOSED

    __slots__ = ()


class GatherRowsOp(TensorOp):
    """Rows of ``table`` picked by integer ``ids``: ``table[ids]`` (ids in [0, rows))."""

    name = "tensor.gather_rows"
    traits = frozenset({Pure})
    reference = staticmethod(gather_rows)
    numpy = "table[ids] (ids int32 / uint32 in [0, len(table)))"
    dtype_doc = "table dtype"
    builder_names = ("gather_rows",)
    needs = None  # lowered structurally: an indirect DMA per 128 ids

    __slots__ = ()

    @classmethod
    def infer(cls, types, _attrs):
        table, ids = tensor_types(cls.name, types, 2)
        if table.rank < 1:
            raise BuildError(f"{cls.name}: table must have at least one dim, got {table}")
        _index_type(cls.name, "ids", ids)
        return [table.with_shape(tuple(ids.shape) + tuple(table.shape[1:]))]


class ScatterRowsOp(TensorOp):
    """``dst`` with row ``ids[k]`` replaced by ``rows[k]`` (a repeated id: the last k wins)."""

    name = "tensor.scatter_rows"
    traits = frozenset({Pure})
    attr_spec = (Attr("unique", BOOL, False),)
    reference = staticmethod(scatter_rows)
    numpy = "out = dst.copy(); out[ids] = rows (last write wins)"
    dtype_doc = "dst dtype (rows must match it)"
    builder_names = ("scatter_rows",)
    needs = None  # lowered structurally: an indirect DMA per 128 ids

    __slots__ = ()

    @classmethod
    def infer(cls, types, _attrs):
        dst, ids, rows = tensor_types(cls.name, types, 3)
        if dst.rank < 1:
            raise BuildError(f"{cls.name}: dst must have at least one dim, got {dst}")
        _index_type(cls.name, "ids", ids)
        want = tuple(ids.shape) + tuple(dst.shape[1:])
        if tuple(rows.shape) != want:
            raise BuildError(
                f"{cls.name}: rows has shape {rows.shape}; ids {ids.shape} and dst {dst.shape} need {want}"
            )
        if rows.dtype is not dst.dtype:
            raise BuildError(
                f"{cls.name}: rows dtype {rows.dtype.numpy_name} differs from dst dtype "
                f"{dst.dtype.numpy_name}"
            )
        return [dst]


class TakeAlongAxisOp(DecomposedIndexedOp):
    """NumPy take_along_axis: ``x`` indexed by ``idx`` along ``axis`` (indices in [-n, n))."""

    name = "tensor.take_along_axis"
    traits = frozenset({Pure})
    attr_spec = (Attr("axis", INT),)
    reference = staticmethod(take_along_axis)
    numpy = "np.take_along_axis(x, idx, axis)"
    dtype_doc = "x dtype"
    builder_names = ("take_along_axis",)

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        x, idx = tensor_types(cls.name, types, 2)
        axis = attrs["axis"]
        _index_type(cls.name, "idx", idx)
        if idx.rank != x.rank:
            raise BuildError(f"{cls.name}: idx has rank {idx.rank} but x {x} has rank {x.rank}")
        if not 0 <= axis < x.rank:
            raise BuildError(f"{cls.name}: axis {axis} is out of range for {x}")
        shape = []
        for d, (a, b) in enumerate(zip(idx.shape, x.shape)):
            if d == axis:
                shape.append(a)
            elif a == b or b == 1:
                shape.append(a)
            elif a == 1:
                shape.append(b)
            else:
                raise BuildError(
                    f"{cls.name}: idx {idx.shape} does not broadcast with x {x.shape} on dim {d}"
                )
        return [x.with_shape(tuple(shape))]


class OneHotOp(DecomposedIndexedOp):
    """``ids[..., None] == arange(depth)`` as ``dtype`` (an id outside [0, depth) gives zeros)."""

    name = "tensor.one_hot"
    traits = frozenset({Pure})
    attr_spec = (Attr("depth", INT), Attr("dtype", DTYPE))
    reference = staticmethod(one_hot)
    numpy = "(ids[..., None] == np.arange(depth)).astype(dtype)"
    dtype_doc = "the dtype attribute"
    builder_names = ("one_hot",)

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        (ids,) = tensor_types(cls.name, types, 1)
        if not ids.dtype.is_int:
            raise BuildError(f"{cls.name}: ids must be integers, got {ids.dtype.numpy_name}")
        if attrs["depth"] < 1:
            raise BuildError(f"{cls.name}: depth {attrs['depth']} must be positive")
        return [TensorType(tuple(ids.shape) + (attrs["depth"],), attrs["dtype"])]


class DynamicSliceOp(DecomposedIndexedOp):
    """The window of ``sizes`` at runtime 0-d ``starts`` (one per dim; the window must fit)."""

    name = "tensor.dynamic_slice"
    traits = frozenset({Pure})
    attr_spec = (Attr("sizes", INT_TUPLE),)
    reference = staticmethod(dynamic_slice)
    numpy = "x[s0:s0+n0, ...] with runtime starts"
    dtype_doc = "x dtype"
    builder_names = ("dynamic_slice",)

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        ts = tensor_types(cls.name, types)
        if not ts:
            raise BuildError(f"{cls.name}: needs x and its start indices")
        x, sizes = ts[0], tuple(attrs["sizes"])
        _starts(cls.name, ts[1:], x.rank)
        if len(sizes) != x.rank or any(not 0 < s <= n for s, n in zip(sizes, x.shape)):
            raise BuildError(
                f"{cls.name}: sizes {list(sizes)} must give each dim of {x.shape} a size in [1, n]"
            )
        return [x.with_shape(sizes)]


class DynamicUpdateSliceOp(DecomposedIndexedOp):
    """``x`` with the window at runtime 0-d ``starts`` replaced by ``update`` (it must fit)."""

    name = "tensor.dynamic_update_slice"
    traits = frozenset({Pure})
    reference = staticmethod(dynamic_update_slice)
    numpy = "out = x.copy(); out[s0:s0+n0, ...] = update"
    dtype_doc = "x dtype (update must match it)"
    builder_names = ("dynamic_update_slice",)

    __slots__ = ()

    @classmethod
    def infer(cls, types, _attrs):
        ts = tensor_types(cls.name, types)
        if len(ts) < 2:
            raise BuildError(f"{cls.name}: needs x, update and the start indices")
        x, upd = ts[0], ts[1]
        _starts(cls.name, ts[2:], x.rank)
        if upd.rank != x.rank or any(not 0 < u <= n for u, n in zip(upd.shape, x.shape)):
            raise BuildError(
                f"{cls.name}: update {upd.shape} must fit in x {x.shape} (same rank, each dim in [1, n])"
            )
        if upd.dtype is not x.dtype:
            raise BuildError(
                f"{cls.name}: update dtype {upd.dtype.numpy_name} differs from x dtype {x.dtype.numpy_name}"
            )
        return [x]


INDEXED_OPS = (GatherRowsOp, ScatterRowsOp, TakeAlongAxisOp, OneHotOp, DynamicSliceOp, DynamicUpdateSliceOp)
