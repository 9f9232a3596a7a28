"""Indexing traced arrays with *traced* integer indices (data-dependent gathers and scatters).

- ``x[ids]`` / ``np.take(x, ids, axis)`` with a traced integer array of any shape →
  ``tensor.gather_rows`` (the axis moved to the front first when it is not axis 0);
- ``x[t]``, ``x[:, t]`` with traced 0-d ints (any number, among static ints and slices) →
  ``tensor.dynamic_slice``; ``x[t] = v``, ``x[:, t] = v`` → ``tensor.dynamic_update_slice``;
- ``x[ids] = v`` with one traced (or static) integer array and ``:`` / ``...`` elsewhere →
  ``tensor.scatter_rows`` (a repeated index: the last write wins, as NumPy does);
- ``np.take_along_axis`` → ``tensor.take_along_axis``; ``np.put_along_axis`` →
  ``tensor.scatter_rows`` of single elements at their row-major positions.

NumPy's rules hold: negative indices count from the end (``-n <= i < n``; ``np.take`` also
takes ``mode='wrap'`` / ``'clip'``), any integer dtype is accepted (cast to int32; uint32 is
kept), the value of an assignment broadcasts to the indexed shape and is cast to the array's
dtype. An index outside its range is an error when the kernel runs (the interpreters raise an
InterpretError naming the op), never a silent wrong element.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..ir.dtypes import int32
from . import rules
from .trace_array import TracedArray, TraceError
from .trace_functions import implements, require, value

_KEEP = ("int32", "uint32")

GRID_ROWS = 128
"""``np.take(x, ids, axis=-1)`` of at most this many rows (the partitions: one gather per id
moves an element of every row) and ..."""
GRID_AXIS_PER_ID = 32
"""... of an axis at least this many times longer than the int32 ids becomes a take_along_axis
of the ids repeated for every row: its gathers cost ~0.3 us per id, the rows transposed
through HBM grow with the axis (cost model, 128 rows: 64 ids of 4,096 columns 51.8 -> 28.5 us,
of 512 columns 17.8 us kept; docs/lowering.md)."""


def _is_int(k) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def index_value(b, idx, what: str):
    """A traced (or static) integer index as an int32 / uint32 Value."""
    v = value(b, idx, what)
    dt = v.dtype
    require(
        dt.is_int and not dt.is_bool,
        what,
        f"indices must be integers (NumPy's rule for array indices), got {dt.numpy_name}",
    )
    return v if dt.numpy_name in _KEEP else b.cast(v, int32)


def wrap(b, ids, n: int, mode: str = "raise", what: str = "x[...]"):
    """``ids`` mapped into ``[0, n)`` as NumPy does: ``raise`` counts negatives from the end
    (anything else stays out of range and fails at run time), ``wrap`` is ``ids % n``,
    ``clip`` clamps (negatives to 0)."""
    signed = ids.dtype.numpy_name != "uint32"
    if mode == "raise":  # min(ids, 0) + n: the same values, an add its range keeps in int32
        return b.where(b.less(ids, 0), b.add(b.minimum(ids, 0), n), ids) if signed else ids
    if mode == "wrap":
        return b.remainder(ids, n)
    if mode == "clip":
        return b.clip(ids, 0 if signed else None, n - 1)
    raise TraceError(f"{what}: mode={mode!r} is not one of 'raise', 'wrap', 'clip'")


def take_traced(b, v, ids, axis: int, mode: str, what: str):
    """``np.take(v, ids, axis)`` for a traced integer index array (any shape) → gather_rows."""
    ax = rules.normalize_axis(what, axis, v.ndim)
    n = v.shape[ax]
    require(n > 0, what, f"cannot take from axis {ax} of size 0")
    raw = index_value(b, ids, what)
    lead = math.prod(v.shape[:ax])
    grid_ok = 1 < lead <= GRID_ROWS and raw.type.size * GRID_AXIS_PER_ID <= n
    if ax == v.ndim - 1 and grid_ok and raw.dtype is int32:
        # a few elements of each of few rows: every row's ids as a take_along_axis grid (one
        # indirect DMA per id, element offsets computed on chip), not the rows transposed
        m = raw.type.size
        idx = raw if mode == "raise" else wrap(b, raw, n, mode, what)
        grid = b.broadcast_to(b.reshape(idx, (1,) * ax + (m,)), v.shape[:ax] + (m,))
        return b.reshape(b.take_along_axis(v, grid, ax), v.shape[:ax] + raw.shape)
    # the index arithmetic on a (k, 1) column: one id per partition, as the gather's index tile
    col = wrap(b, b.reshape(raw, (raw.type.size, 1)), n, mode, what)
    ids = b.reshape(col, raw.shape)
    if ax == 0:
        return b.gather_rows(v, ids)
    rest = [d for d in range(v.ndim) if d != ax]
    g = b.gather_rows(b.transpose(v, [ax, *rest]), ids)  # ids.shape + rest
    k = ids.ndim
    perm = list(range(k, k + ax)) + list(range(k)) + list(range(k + ax, g.ndim))
    return b.transpose(g, perm)


def _expand(key: tuple, rank: int, what: str) -> tuple:
    """The key with its ``...`` replaced by full slices (one ``...`` at most)."""
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    require(n_real <= rank, what, f"too many indices for an array of rank {rank}")
    require(sum(k is Ellipsis for k in key) <= 1, what, "an index can only have a single ellipsis ('...')")
    if any(k is Ellipsis for k in key):
        i = next(n for n, k in enumerate(key) if k is Ellipsis)
        return key[:i] + (slice(None),) * (rank - n_real) + key[i + 1 :]
    return key + (slice(None),) * (rank - n_real)


def _result_axis(key, pos: int, rank: int) -> int:
    """Axis of the basic-indexing result where key[pos] (taken as a full slice) lands."""
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    axis = 0
    for k in key[:pos]:
        if k is Ellipsis:
            axis += rank - n_real
        elif not _is_int(k):
            axis += 1
    return axis


def getitem_scalars(b, v, key: tuple, what: str):
    """``v[key]`` where the traced entries of ``key`` are 0-d ints → dynamic_slice."""
    traced = [i for i, k in enumerate(key) if isinstance(k, TracedArray)]
    basic = tuple(slice(None) if isinstance(k, TracedArray) else k for k in key)
    w = b.value_getitem(v, basic)
    starts, sizes = [0] * w.ndim, list(w.shape)
    axes = []
    for pos in traced:
        a = _result_axis(key, pos, v.ndim)
        n = w.shape[a]
        require(n > 0, what, f"index into axis {a} of size 0")
        starts[a] = wrap(b, index_value(b, key[pos], what), n)
        sizes[a] = 1
        axes.append(a)
    r = b.dynamic_slice(w, starts, sizes)
    return b.reshape(r, tuple(s for d, s in enumerate(r.shape) if d not in axes))


def setitem_scalars(arr: TracedArray, key: tuple, val, what: str) -> None:
    """``arr[key] = val`` with traced 0-d ints among static ints and unit-step slices →
    dynamic_update_slice of the window."""
    b, x = arr.builder, arr.value
    key = _expand(key, x.ndim, what)
    starts, window, view, flips = [], [], [], []
    d = 0
    for k in key:
        if k is None:
            view.append(1)
            continue
        n = x.shape[d]
        if isinstance(k, TracedArray):
            require(n > 0, what, f"index into axis {d} of size 0")
            starts.append(wrap(b, index_value(b, k, what), n))
            window.append(1)
        elif isinstance(k, slice):
            start, stop, step = k.indices(n)
            count = len(range(start, stop, step))
            require(
                abs(step) == 1 or count <= 1,
                what,
                f"a slice with step {step} next to a traced index is not supported when tracing "
                "(only unit-step slices, ints and None)",
            )
            lo = start - count + 1 if step < 0 and count else start
            if step < 0 and count:
                flips.append(d)
            starts.append(lo)
            window.append(count)
            view.append(count)
        elif _is_int(k):
            i = operator.index(k)
            require(-n <= i < n, what, f"index {i} is out of bounds for axis {d} with size {n}")
            starts.append(i % n)
            window.append(1)
        else:
            raise TraceError(
                f"{what}: index {k!r} is not supported next to a traced index when tracing "
                "(ints, unit-step slices, None, ...)"
            )
        d += 1
    u = _broadcast_value(b, val, tuple(view), x.dtype, what)
    if 0 in window:
        return
    u = b.reshape(u, tuple(window))
    if flips:
        u = b.value_getitem(
            u, tuple(slice(None, None, -1) if a in flips else slice(None) for a in range(x.ndim))
        )
    arr.rebind(b.dynamic_update_slice(x, u, starts), what)


def _broadcast_value(b, val, shape: tuple, dtype, what: str):
    """The assigned value broadcast to the indexed ``shape`` and cast to ``dtype`` (NumPy drops
    the value's leading unit dims first)."""
    u = value(b, val, what)
    while u.ndim > len(shape) and u.shape[0] == 1:
        u = b.reshape(u, u.shape[1:])
    require(
        rules.can_broadcast_to(u.shape, shape),
        what,
        f"could not broadcast a value of shape {u.shape} into shape {shape}",
    )
    return b.cast(b.broadcast_to(u, shape), dtype)


def setitem_rows(arr: TracedArray, key: tuple, pos: int, val, what: str) -> None:
    """``arr[key] = val`` where ``key[pos]`` is an integer index array (traced or static) and
    every other entry is ``:`` or ``...`` → scatter_rows along that axis."""
    b, x = arr.builder, arr.value
    for i, k in enumerate(key):
        if i != pos and k is not Ellipsis and not (isinstance(k, slice) and k == slice(None)):
            raise TraceError(
                f"{what}: assignment through an index array needs ':' or '...' on every other "
                f"axis when tracing, got {k!r}; write x[..., ids, ...] = v per axis"
            )
    require(sum(k is Ellipsis for k in key) <= 1, what, "an index can only have a single ellipsis ('...')")
    n_ell = sum(k is Ellipsis for k in key)
    require(len(key) - n_ell <= x.ndim, what, f"too many indices for an array of rank {x.ndim}")
    ax = pos
    if any(k is Ellipsis for k in key[:pos]):
        ax = pos - 1 + x.ndim - (len(key) - 1)
    n = x.shape[ax]
    idx = key[pos]
    if isinstance(idx, np.ndarray) and idx.dtype == np.bool_ and idx.ndim == 1:
        require(
            idx.shape[0] == n,
            what,
            f"a boolean index of length {idx.shape[0]} does not match axis {ax} of size {n}",
        )
        idx = np.flatnonzero(idx)
    if isinstance(idx, np.ndarray):
        require(idx.dtype.kind in "iu", what, f"indices must be integers, got dtype {idx.dtype}")
        bad = idx[(idx < -n) | (idx >= n)]
        require(
            not bad.size,
            what,
            f"index {int(bad.flat[0]) if bad.size else 0} is out of bounds for axis {ax} with size {n}",
        )
        idx = (idx.astype(np.int64) % max(n, 1)).astype(np.int32)
    ids = wrap(b, index_value(b, idx, what), n)
    k = ids.ndim
    view = x.shape[:ax] + tuple(ids.shape) + x.shape[ax + 1 :]
    u = _broadcast_value(b, val, view, x.dtype, what)
    if 0 in view:
        return
    rows = b.transpose(u, list(range(ax, ax + k)) + list(range(ax)) + list(range(ax + k, len(view))))
    rest = [d for d in range(x.ndim) if d != ax]
    xt = b.transpose(x, [ax, *rest]) if ax else x
    s = b.scatter_rows(xt, ids, rows)
    if ax:
        s = b.transpose(s, list(range(1, ax + 1)) + [0] + list(range(ax + 1, x.ndim)))
    arr.rebind(s, what)


def _along_axis_args(b, arr, indices, axis, what: str):
    """(array Value, int32 index Value, axis) of take / put_along_axis, checked as NumPy does."""
    v = value(b, arr, what)
    if isinstance(indices, TracedArray):
        idx = index_value(b, indices, what)
    else:
        i = np.asarray(indices)
        require(i.dtype.kind in "iu", what, f"indices must be an integer array, got dtype {i.dtype}")
        idx = None
    if axis is None:
        require(
            (idx.ndim if idx is not None else np.ndim(indices)) == 1,
            what,
            "with axis=None the indices must be 1-D (the array is flattened)",
        )
        v, axis = b.reshape(v, (-1,)), 0
    ax = rules.normalize_axis(what, axis, v.ndim)
    nd = idx.ndim if idx is not None else np.ndim(indices)
    require(
        nd == v.ndim,
        what,
        f"indices and the array must have the same number of dimensions, got {nd} and {v.ndim}",
    )
    if idx is None:
        i, n = np.asarray(indices), v.shape[ax]
        bad = i[(i < -n) | (i >= n)]
        require(
            not bad.size,
            what,
            f"index {int(bad.flat[0]) if bad.size else 0} is out of bounds for axis {ax} with size {n}",
        )
        idx = b.constant(i.astype(np.int32))
    return v, idx, ax


def _along_shape(idx_shape, x_shape, ax: int, what: str) -> tuple:
    """The shape indices and array broadcast to (NumPy's fancy index of *_along_axis)."""
    try:
        out = list(
            np.broadcast_shapes(tuple(idx_shape), tuple(1 if d == ax else n for d, n in enumerate(x_shape)))
        )
    except ValueError:
        raise TraceError(
            f"{what}: indices of shape {tuple(idx_shape)} do not broadcast against the array "
            f"{tuple(x_shape)} outside axis {ax} (each dim must match or be 1)"
        ) from None
    out[ax] = idx_shape[ax]
    return tuple(out)


@implements(np.take_along_axis)
def take_along_axis(b, arr, indices, axis=-1):
    """np.take_along_axis(arr, indices, axis) → tensor.take_along_axis."""
    w = "numpy.take_along_axis"
    v, idx, ax = _along_axis_args(b, arr, indices, axis, w)
    _along_shape(idx.shape, v.shape, ax, w)
    return TracedArray(b.take_along_axis(v, idx, ax))


@implements(np.put_along_axis)
def put_along_axis(b, arr, indices, values, axis):
    """np.put_along_axis(arr, indices, values, axis): ``arr`` (a traced array) is updated in
    place by one scatter_rows of its elements at their row-major positions."""
    w = "numpy.put_along_axis"
    if not isinstance(arr, TracedArray):
        raise TraceError(
            f"{w}: the destination must be a traced array (a NumPy array cannot hold traced "
            "values); copy it into the trace first, e.g. y = x + 0"
        )
    arr.check_inplace(w)
    x = arr.value
    v, idx, ax = _along_axis_args(b, arr, indices, axis, w)
    shape = _along_shape(idx.shape, v.shape, ax, w)
    n, total = v.shape[ax], v.type.size
    u = _broadcast_value(b, values, shape, v.dtype, w)
    if 0 in shape:
        return None
    i = b.broadcast_to(idx, shape)
    signed = idx.dtype.numpy_name != "uint32"
    ok = b.logical_and(b.greater_equal(i, -n), b.less(i, n)) if signed else b.less(i, n)
    i = i if signed else b.cast(i, int32)  # out-of-range values are replaced below
    flat = None
    for d in range(v.ndim):
        stride = math.prod(v.shape[d + 1 :])
        if d == ax:
            c = wrap(b, i, n)
        elif v.shape[d] == 1:
            continue
        else:
            c = b.iota(shape, d)
        term = b.mul(c, stride) if stride != 1 else c
        flat = term if flat is None else b.add(flat, term)
    if flat is None:
        flat = b.full(shape, 0, int32)
    flat = b.where(ok, flat, total)  # past the table: the scatter's bounds check rejects it
    k = math.prod(shape)
    s = b.scatter_rows(b.reshape(v, (total, 1)), b.reshape(flat, (k,)), b.reshape(u, (k, 1)))
    arr.rebind(b.reshape(s, x.shape), w)
    return None


def getitem_multi(b, v, key: tuple, what: str):
    """``v[key]`` with several index arrays (traced or static; ints join them, as in NumPy):
    the indexed dims are moved to the front and flattened, the arrays broadcast and combined
    into one row-major row index, and one gather_rows picks the rows. The broadcast dims land
    where the first index array is when the arrays (and ints) are adjacent, else in front."""
    require(
        all(k is not None for k in key),
        what,
        "None (np.newaxis) next to several index arrays is not supported when tracing",
    )
    key = _expand(key, v.ndim, what)
    adv = [d for d, k in enumerate(key) if not isinstance(k, slice)]
    w = b.value_getitem(v, tuple(slice(None) if d in adv else k for d, k in enumerate(key)))
    shapes = []
    for d in adv:
        k = key[d]
        if isinstance(k, np.ndarray):
            require(k.dtype.kind in "iu", what, f"indices must be integers, got dtype {k.dtype}")
        shapes.append(tuple(np.shape(k)))
    try:
        bshape = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise TraceError(
            f"{what}: shape mismatch: the index arrays of shapes {shapes} could not be broadcast together"
        ) from None
    sizes = [w.shape[d] for d in adv]
    total = math.prod(sizes)
    flat, ok = None, None
    for j, d in enumerate(adv):
        k, n = key[d], sizes[j]
        stride = math.prod(sizes[j + 1 :])
        if isinstance(k, TracedArray):
            raw = index_value(b, k, what)
            good = (
                b.less(raw, n)
                if raw.dtype.numpy_name == "uint32"
                else b.logical_and(b.greater_equal(raw, -n), b.less(raw, n))
            )
            ok = (
                good
                if ok is None
                else b.logical_and(b.broadcast_to(ok, bshape), b.broadcast_to(good, bshape))
            )
            i = b.cast(wrap(b, raw, n), int32)
        else:
            a = np.asarray(k, np.int64)
            bad = a[(a < -n) | (a >= n)]
            require(
                not bad.size,
                what,
                f"index {int(bad.flat[0]) if bad.size else 0} is out of bounds for axis {d} with size {n}",
            )
            i = b.constant((a % n).astype(np.int32)) if a.ndim else b.full((), int(a % n), int32)
        term = b.mul(i, stride) if stride != 1 else i
        flat = (
            b.broadcast_to(term, bshape)
            if flat is None
            else b.add(b.broadcast_to(flat, bshape), b.broadcast_to(term, bshape))
        )
    if ok is not None:
        flat = b.where(b.broadcast_to(ok, bshape), flat, total)
    rest = [d for d in range(w.ndim) if d not in adv]
    table = b.reshape(b.transpose(w, adv + rest), (total,) + tuple(w.shape[d] for d in rest))
    r = b.gather_rows(table, flat)  # bshape + rest
    if adv == list(range(adv[0], adv[-1] + 1)) and adv[0] > 0:
        k, lead = len(bshape), adv[0]
        perm = list(range(k, k + lead)) + list(range(k)) + list(range(k + lead, r.ndim))
        r = b.transpose(r, perm)
    return r
