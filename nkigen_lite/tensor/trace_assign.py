"""Strided assignment on traced arrays (``x[::2, 1::3] = v``, static steps): the value is
upsampled to the strided positions (reshape, broadcast, reshape, slice per strided dim), padded
to the array's shape and selected with a static mask (``tensor.where``); the array is rebound, a
functional update like every traced assignment."""

from __future__ import annotations

import operator

import numpy as np

from . import rules
from .trace_array import TracedArray
from .trace_functions import require, value


def is_strided(key, shape) -> bool:
    """True when ``key`` (a tuple) has a slice selecting two or more elements with |step| > 1."""
    real = [k for k in key if k is not None and k is not Ellipsis]
    if len(real) > len(shape) or any(k is None for k in key):
        return False
    dims = list(shape)
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - len(real)) + key[i + 1 :]
    for k, n in zip(key, dims):
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if abs(step) > 1 and len(range(start, stop, step)) > 1:
                return True
    return False


def strided_setitem(arr: TracedArray, key: tuple, val, what: str) -> None:
    """``arr[key] = val`` for a key of ints, slices (any step) and at most one ``...``."""
    b, x = arr.builder, arr.value
    for k in key:
        require(
            k is Ellipsis or isinstance(k, slice) or isinstance(k, (int, np.integer)),
            what,
            f"index {k!r} is not supported in a strided assignment when tracing (ints, slices, ...)",
        )
    n_real = sum(k is not Ellipsis for k in key)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (x.ndim - n_real) + key[i + 1 :]
    key = key + (slice(None),) * (x.ndim - len(key))
    dims = []  # per dim: (lowest position, count, |step|, reversed, kept in the view)
    for d, (k, n) in enumerate(zip(key, x.shape)):
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            c = len(range(start, stop, step))
            lo = start if step > 0 else start + (c - 1) * step
            dims.append((lo, c, abs(step), step < 0, True))
        else:
            i = operator.index(k)
            require(-n <= i < n, what, f"index {i} is out of bounds for axis {d} with size {n}")
            dims.append((i % n, 1, 1, False, False))
    view_shape = tuple(c for _, c, _, _, kept in dims if kept)
    u = value(b, val, what)
    while u.ndim > len(view_shape) and u.shape[0] == 1:  # NumPy drops leading unit dims
        u = b.reshape(u, u.shape[1:])
    require(
        rules.can_broadcast_to(u.shape, view_shape),
        what,
        f"could not broadcast a value of shape {u.shape} into shape {view_shape}",
    )
    if any(c == 0 for _, c, _, _, _ in dims):
        return
    u = b.cast(b.broadcast_to(u, view_shape), x.dtype)
    u = b.reshape(u, tuple(c for _, c, _, _, _ in dims))
    mask = np.ones((), bool)
    for d, (lo, c, s, rev, _) in enumerate(dims):
        n = x.shape[d]
        if rev:
            u = b.value_getitem(u, (slice(None),) * d + (slice(None, None, -1),))
        if s > 1 and c > 1:  # upsample: each element followed by s - 1 fillers, then trimmed
            shp = u.shape
            u = b.reshape(u, shp[: d + 1] + (1,) + shp[d + 1 :])
            u = b.broadcast_to(u, shp[: d + 1] + (s,) + shp[d + 1 :])
            u = b.reshape(u, shp[:d] + (c * s,) + shp[d + 1 :])
            u = b.value_getitem(u, (slice(None),) * d + (slice(0, (c - 1) * s + 1),))
        span = (c - 1) * s + 1
        parts = []
        if lo:
            parts.append(b.full(u.shape[:d] + (lo,) + u.shape[d + 1 :], 0, x.dtype))
        parts.append(u)
        if n - lo - span:
            parts.append(b.full(u.shape[:d] + (n - lo - span,) + u.shape[d + 1 :], 0, x.dtype))
        u = b.concat(parts, d) if len(parts) > 1 else u
        hit = np.zeros(n, bool)
        hit[lo : lo + span : s] = True
        mask = np.multiply.outer(mask, hit)
    arr.rebind(b.where(b.constant(mask), u, x), what)
