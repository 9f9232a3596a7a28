"""Indexing traced arrays: ``x[...]``, ``np.take``, ``x[...] = v``.

Reads: ints, slices, None and ``...`` (a view, as in NumPy), plus one static integer array
(or 1-D / full-shape boolean mask) as ``np.take`` does it: runs of evenly spaced indices become
one strided slice each, joined by a concat. Writes: a step-1 (or -1) region of ints and slices
is rebuilt by concatenation, a region with larger steps (no ``None``) by trace_assign.py; a
full-shape boolean mask (static or traced) with a scalar value
becomes ``np.where``. Traced integer indices (gathers, dynamic slices and their writes) and
writes through an index array are handed to trace_gather.py.
"""

from __future__ import annotations

import operator

import numpy as np

from . import rules
from .trace_array import TracedArray, TraceError
from .trace_assign import is_strided, strided_setitem
from .trace_functions import implements, require, value
from .trace_gather import getitem_multi, getitem_scalars, setitem_rows, setitem_scalars, take_traced
from .trace_shape import slices


def _is_int(k) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def _static_key(key, what: str) -> tuple:
    """The key as a tuple; lists become arrays, 0-d integer arrays become ints; traced integer
    indices are kept (a traced boolean mask is refused)."""
    key = key if isinstance(key, tuple) else (key,)
    out = []
    for k in key:
        if isinstance(k, TracedArray):
            if k.value.dtype.is_bool:
                raise TraceError(
                    f"{what}: a traced boolean mask selects a data-dependent number "
                    "of elements; use np.where(mask, x, other) instead"
                )
            require(
                k.value.dtype.is_int,
                what,
                f"indices must be integers (NumPy's rule for array indices), got {k.value.dtype.numpy_name}",
            )
            out.append(k)
            continue
        if isinstance(k, list):
            k = np.asarray(k)
        if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
            k = int(k)
        out.append(k)
    return tuple(out)


def take_static(b, v, indices, axis: int, mode: str, what: str):
    """``np.take(v, indices, axis)`` for static integer indices (evenly spaced runs -> slices)."""
    idx = np.asarray(indices)
    require(idx.dtype.kind in "iu" or idx.size == 0, what, f"indices must be integers, got dtype {idx.dtype}")
    ax = rules.normalize_axis(what, axis, v.ndim)
    n = v.shape[ax]
    flat = idx.reshape(-1).astype(np.int64)
    if mode == "raise":
        bad = flat[(flat < -n) | (flat >= n)]
        require(
            not bad.size,
            what,
            f"index {int(bad[0]) if bad.size else 0} is out of bounds for axis {ax} with size {n}",
        )
        flat = flat % n if n else flat
    elif mode == "wrap":
        flat = flat % n
    elif mode == "clip":
        flat = np.clip(flat, 0, n - 1)
    else:
        raise TraceError(f"{what}: mode={mode!r} is not one of 'raise', 'wrap', 'clip'")
    parts, i = [], 0
    sl = [slice(None)] * v.ndim
    while i < len(flat):
        j = i + 1
        step = int(flat[j] - flat[i]) if j < len(flat) else 1
        while j < len(flat) and flat[j] - flat[j - 1] == step:
            j += 1
        start, count = int(flat[i]), j - i
        if step == 0:
            sl[ax] = slice(start, start + 1)
            p = slices(b, v, sl)
            parts.append(b.broadcast_to(p, v.shape[:ax] + (count,) + v.shape[ax + 1 :]))
        else:
            stop = start + step * (count - 1) + (1 if step > 0 else -1)
            sl[ax] = slice(start, stop if stop >= 0 else None, step)
            parts.append(slices(b, v, sl))
        i = j
    if not parts:
        sl[ax] = slice(0, 0)
        parts.append(slices(b, v, sl))
    out = b.concat(parts, ax)
    return b.reshape(out, v.shape[:ax] + idx.shape + v.shape[ax + 1 :])


@implements(np.take)
def take(b, a, indices, axis=None, out=None, mode="raise"):
    w = "numpy.take"
    require(out is None, w, "out= is not supported when tracing; assign the result")
    v = value(b, a, w)
    if axis is None:
        v, axis = b.reshape(v, (-1,)), 0
    if isinstance(indices, TracedArray):
        return TracedArray(take_traced(b, v, indices, axis, mode, w))
    return TracedArray(take_static(b, v, indices, axis, mode, w))


def getitem(arr: TracedArray, key) -> TracedArray:
    """``arr[key]`` with NumPy's rules for static keys."""
    what = "x[...]"
    b, v = arr.builder, arr.value
    key = _static_key(key, what)
    traced = [i for i, k in enumerate(key) if isinstance(k, TracedArray)]
    arrays = [i for i, k in enumerate(key) if isinstance(k, np.ndarray)]
    if traced and not arrays and all(key[i].ndim == 0 for i in traced):
        return TracedArray(getitem_scalars(b, v, key, what))
    arrays = sorted(arrays + traced)
    if not arrays:
        return arr.view(b.value_getitem(v, key))
    if len(arrays) > 1:
        return TracedArray(getitem_multi(b, v, key, what))
    pos = arrays[0]
    idx = key[pos]
    if isinstance(idx, TracedArray):
        basic = key[:pos] + (slice(None),) + key[pos + 1 :]
        w = b.value_getitem(v, basic)
        r = take_traced(b, w, idx, _result_axis(key, pos, v.ndim), "raise", what)
        return TracedArray(_advanced_first(key, pos, idx.ndim, _result_axis(key, pos, v.ndim), r, b))
    if idx.dtype == np.bool_:
        if len(key) == 1 and idx.shape == v.shape and v.ndim > 1:
            flat = b.reshape(v, (-1,))
            return TracedArray(take_static(b, flat, np.flatnonzero(idx), 0, "raise", what))
        require(
            idx.ndim == 1,
            what,
            f"a boolean index of shape {idx.shape} is not supported "
            "when tracing (only 1-D masks or a mask of the array's full shape)",
        )
        idx = np.flatnonzero(idx)
    basic = key[:pos] + (slice(None),) + key[pos + 1 :]
    w = b.value_getitem(v, basic)
    axis = _result_axis(key, pos, v.ndim)
    r = take_static(b, w, idx, axis, "raise", what)
    return TracedArray(_advanced_first(key, pos, idx.ndim, axis, r, b))


def _advanced_first(key, pos: int, k: int, axis: int, r, b):
    """NumPy's placement rule: when ints (advanced indices too) and the index array at ``pos``
    are not adjacent, the array's ``k`` result dims move to the front."""
    advanced = [i for i, e in enumerate(key) if _is_int(e) or i == pos]
    if advanced != list(range(advanced[0], advanced[-1] + 1)):
        perm = list(range(axis, axis + k)) + [d for d in range(r.ndim) if not axis <= d < axis + k]
        r = b.transpose(r, perm)
    return r


def _result_axis(key, pos: int, rank: int) -> int:
    """Axis of the result of basic indexing where key[pos] (a full slice) lands."""
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    axis = 0
    for k in key[:pos]:
        if k is Ellipsis:
            axis += rank - n_real
        elif not _is_int(k):
            axis += 1
    return axis


def setitem(arr: TracedArray, key, val) -> None:
    """``arr[key] = val``: rebinds ``arr`` to a new Value (see the module docstring)."""
    what = "x[...] = value"
    arr.check_inplace(what)
    b, v = arr.builder, arr.value
    if (
        isinstance(key, (np.ndarray, TracedArray))
        and np.dtype(key.dtype) == np.bool_
        and (isinstance(key, TracedArray) or key.ndim != 1 or v.ndim == 1)
    ):
        require(
            tuple(key.shape) == v.shape,
            what,
            f"a boolean mask must have the array's shape {v.shape}, got {tuple(key.shape)}",
        )
        u = value(b, val, what)
        require(u.ndim == 0, what, "assigning through a boolean mask needs a scalar value when tracing")
        mask = key.value if isinstance(key, TracedArray) else b.constant(key)
        arr.rebind(b.where(mask, b.cast(u, v.dtype), v), what)
        return
    key = _static_key(key, what)
    traced = [i for i, k in enumerate(key) if isinstance(k, TracedArray)]
    arrays = [i for i, k in enumerate(key) if isinstance(k, np.ndarray)]
    if traced and not arrays and all(key[i].ndim == 0 for i in traced):
        setitem_scalars(arr, key, val, what)
        return
    if traced or arrays:
        require(
            len(traced) + len(arrays) == 1,
            what,
            "assignment through more than one index array (traced or static) is not supported "
            "when tracing; assign one axis at a time",
        )
        setitem_rows(arr, key, (traced + arrays)[0], val, what)
        return
    if is_strided(key, v.shape):
        strided_setitem(arr, key, val, what)
        return
    region, view_shape = _region(key, v.shape, what)
    u = value(b, val, what)
    while u.ndim > len(view_shape) and u.shape[0] == 1:  # NumPy drops leading unit dims
        u = b.reshape(u, u.shape[1:])
    require(
        rules.can_broadcast_to(u.shape, view_shape),
        what,
        f"could not broadcast a value of shape {u.shape} into shape {view_shape}",
    )
    u = b.cast(b.broadcast_to(u, view_shape), v.dtype)
    u = b.reshape(u, tuple(hi - lo for lo, hi, _ in region))
    flips = [d for d, (_, _, rev) in enumerate(region) if rev]
    if flips:
        u = b.value_getitem(
            u, tuple(slice(None, None, -1) if d in flips else slice(None) for d in range(len(region)))
        )
    if any(hi == lo for lo, hi, _ in region):
        return
    arr.rebind(_place(b, v, u, region, 0), what)


def _region(key, shape, what):
    """Per dim (lo, hi, reversed) of a basic key with unit steps, and the shape it selects."""
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, slice) or _is_int(k)):
            raise TraceError(
                f"{what}: index {k!r} is not supported for assignment when tracing "
                "(only ints, slices, None, ... and a full boolean mask)"
            )
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    require(n_real <= len(shape), what, f"too many indices for an array of rank {len(shape)}")
    require(sum(k is Ellipsis for k in key) <= 1, what, "an index can only have a single ellipsis ('...')")
    if any(k is Ellipsis for k in key):
        i = next(n for n, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - n_real) + key[i + 1 :]
    else:
        key = key + (slice(None),) * (len(shape) - n_real)
    region, view_shape, d = [], [], 0
    for k in key:
        if k is None:
            view_shape.append(1)
            continue
        n = shape[d]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            count = len(range(start, stop, step))
            require(
                abs(step) == 1 or count <= 1,
                what,
                f"assignment to a strided slice (step {step}) is not supported when tracing",
            )
            if step < 0 and count:
                region.append((start - count + 1, start + 1, True))
            else:
                region.append((start, start + count, False))
            view_shape.append(count)
        else:
            i = operator.index(k)
            require(-n <= i < n, what, f"index {i} is out of bounds for axis {d} with size {n}")
            i %= n
            region.append((i, i + 1, False))
        d += 1
    return region, tuple(view_shape)


def _place(b, x, u, region, d):
    """``x`` with the block ``region[d:]`` replaced by ``u`` (concatenation per dim)."""
    if d == len(region):
        return u
    lo, hi, _ = region[d]
    n = x.shape[d]
    if lo == 0 and hi == n:
        return _place(b, x, u, region, d + 1)
    sl = [slice(None)] * x.ndim
    parts = []
    for a, z in ((0, lo), (lo, hi), (hi, n)):
        if a == z:
            continue
        sl[d] = slice(a, z)
        piece = slices(b, x, sl)
        parts.append(_place(b, piece, u, region, d + 1) if (a, z) == (lo, hi) else piece)
    return b.concat(parts, d)
