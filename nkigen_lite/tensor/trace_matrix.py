"""Matrix functions on traced arrays: np.cumsum, np.trace, np.diag, np.linalg.norm and
np.copyto (a functional update of the destination: it is rebound, as ``x[...] = v`` is)."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import bool_, float32, int32
from . import rules
from .trace_array import TracedArray, dtype_arg
from .trace_functions import implements, require, value


@implements(np.cumsum)
def cumsum(b, a, axis=None, dtype=None, out=None):
    w = "numpy.cumsum"
    require(out is None, w, "out= is not supported when tracing; assign the result")
    v = value(b, a, w)
    if axis is None:
        v, axis = b.reshape(v, (-1,)), 0
    require(v.ndim >= 1, w, "cumsum of a 0-d array needs axis=None")
    ax = rules.normalize_axis(w, axis, v.ndim)
    if dtype is not None:
        v = b.cast(v, dtype_arg(dtype))
    return TracedArray(b.cumsum(v, axis=ax))


def _diagonal_mask(b, shape, offset):
    """Bool mask of ``shape`` (rank 2): true where column - row == offset."""
    rows = b.iota(shape, 0, int32)
    cols = b.iota(shape, 1, int32)
    return b.equal(b.sub(cols, rows), offset)


@implements(np.trace)
def trace(b, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    w = "numpy.trace"
    require(out is None, w, "out= is not supported when tracing; assign the result")
    v = value(b, a, w)
    require(v.ndim >= 2, w, "diag requires an array of at least two dimensions")
    a1, a2 = rules.normalize_axis(w, axis1, v.ndim), rules.normalize_axis(w, axis2, v.ndim)
    require(a1 != a2, w, "axis1 and axis2 cannot be the same")
    rest = [d for d in range(v.ndim) if d not in (a1, a2)]
    v = b.transpose(v, rest + [a1, a2])
    n, m = v.shape[-2:]
    mask = b.broadcast_to(_diagonal_mask(b, (n, m), int(offset)), v.shape)
    if dtype is not None:
        v = b.cast(v, dtype_arg(dtype))
    zero = b.full((), False if v.dtype is bool_ else 0, v.dtype)
    return TracedArray(b.sum(b.where(mask, v, zero), axis=(-2, -1)))


@implements(np.diag)
def diag(b, v, k=0):
    w = "numpy.diag"
    x = value(b, v, w)
    require(x.ndim in (1, 2), w, "input must be 1- or 2-d")
    k = int(k)
    if x.ndim == 2:
        n, m = x.shape
        lo, hi = max(0, -k), min(n, m - k)
        if hi <= lo:
            return TracedArray(b.zeros((0,), x.dtype))
        mask = _diagonal_mask(b, (n, m), k)
        zero = b.full((), False if x.dtype is bool_ else 0, x.dtype)
        # column sums of the masked matrix: entry j holds x[j - k, j]
        s = b.cast(b.sum(b.where(mask, x, zero), axis=0), x.dtype)
        return TracedArray(b.slice(s, [lo + k], [hi + k]))
    n = x.shape[0] + abs(k)
    mask = _diagonal_mask(b, (n, n), k)
    # row i of the result holds x[i] at column i + k (k >= 0) or row i holds x[i + k] (k < 0)
    if k >= 0:
        padded = b.concat([x, b.zeros((k,), x.dtype)], 0) if k else x
        src = b.broadcast_to(b.reshape(padded, (n, 1)), (n, n))
    else:
        padded = b.concat([b.zeros((-k,), x.dtype), x], 0)
        src = b.broadcast_to(b.reshape(padded, (n, 1)), (n, n))
    zero = b.full((), False if x.dtype is bool_ else 0, x.dtype)
    return TracedArray(b.where(mask, src, zero))


@implements(np.linalg.norm)
def norm(b, x, ord=None, axis=None, keepdims=False):  # noqa: A002  (NumPy's parameter name)
    w = "numpy.linalg.norm"
    v = value(b, x, w)
    if not np.issubdtype(v.dtype.np_dtype, np.inexact):  # ints, bool, bf16, fp8: NumPy's float
        v = b.cast(v, float32)
    if axis is None:
        require(
            ord is None or (ord == "fro" and v.ndim == 2),
            w,
            f"ord={ord!r} without axis is not supported (use None, or 'fro' on a matrix)",
        )
        axes = tuple(range(v.ndim))
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        axes = tuple(rules.normalize_axis(w, a, v.ndim) for a in axes)
        require(len(axes) in (1, 2), w, "axis must name one or two axes")
        allowed = (None, 2, 2.0) if len(axes) == 1 else (None, "fro")
        require(ord in allowed, w, f"ord={ord!r} is not supported when tracing (only {allowed})")
    a = b.abs(v) if v.dtype.is_float else v
    return TracedArray(b.sqrt(b.sum(b.mul(a, a), axis=axes, keepdims=bool(keepdims))))


@implements(np.copyto)
def copyto(b, dst, src, casting="same_kind", where=True):
    w = "numpy.copyto"
    require(isinstance(dst, TracedArray), w, "the destination must be a traced array")
    require(casting == "same_kind", w, f"casting={casting!r} is not supported (only 'same_kind')")
    dst.check_inplace(w)
    d = dst.value
    s = value(b, src, w)
    require(
        rules.can_broadcast_to(s.shape, d.shape),
        w,
        f"could not broadcast input array from shape {s.shape} into shape {d.shape}",
    )
    s = b.broadcast_to(s, d.shape)
    if where is not True:
        m = value(b, where, w)
        require(m.dtype is bool_, w, "where= must be a boolean array")
        s = b.where(b.broadcast_to(m, d.shape), s, d)
    dst.rebind(s, w)
