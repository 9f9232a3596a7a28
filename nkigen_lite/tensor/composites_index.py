"""Composite ops about positions along an axis: argmax, argmin (first index of the extreme)
and cumsum (inclusive prefix sum), each defined by a NumPy function (``define_op``).

argmax and argmin are the one home of ``b.argmax`` / ``b.argmin`` and of ``@nk.trace``'s
``np.argmax`` / ``np.argmin`` (trace_reduce.py builds these ops). On NumPy arrays they are
NumPy's; traced (their expansion, which decompose inlines when the native top-8 path does not
take them: transforms/decomposition/ordering.py for argmax, transforms/lower/argmin.py for
argmin) they are two passes, ``first_extreme``: the extreme, then the lowest index holding it, a
NaN counting as the extreme as in NumPy. The extreme of int32 / uint32 values is exact beyond
2**24 (decompose splits it: transforms/decomposition/wide_int_extreme.py).

``cumsum`` adds in log2(n) doubling steps (step s adds the value s places before), so every
add is an exact integer add for integer inputs (int32 results wrap like NumPy's int32 sums);
floats narrower than f32 are summed in f32 and rounded back to their dtype.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import get_dtype, int32
from .ops.composite import define_op
from .trace_array import TracedArray


def first_extreme(b, v, kind: str, axis: int, keepdims: bool):
    """The lowest index (int32) along ``axis`` holding the ``kind`` ("max" / "min") of the
    Builder value ``v``; a NaN counts as the extreme (the reduction propagates it, and
    ``v != v`` marks it)."""
    n = v.shape[axis]
    m = b.reduce(v, axis, kind, True)
    hit = b.equal(v, m)
    if v.dtype.is_float:
        hit = b.logical_or(hit, b.not_equal(v, v))
    idx = b.iota(v.shape, axis, int32)
    return b.reduce(b.where(hit, idx, n), axis, "min", bool(keepdims))


def _arg(kind: str, x, axis: int, keepdims: bool):
    if isinstance(x, TracedArray):  # the expansion
        ax = axis % x.ndim if x.ndim else axis
        return TracedArray(first_extreme(x.builder, x.value, kind, ax, keepdims))
    fn = np.argmax if kind == "max" else np.argmin
    return fn(x, axis=axis, keepdims=keepdims).astype(np.int32)


def _argmax(x, axis=-1, keepdims=False):
    """Index (int32) of the first maximum along axis; a NaN counts as the maximum."""
    return _arg("max", x, axis, keepdims)


def _argmin(x, axis=-1, keepdims=False):
    """Index (int32) of the first minimum along axis; a NaN counts as the minimum."""
    return _arg("min", x, axis, keepdims)


def _cumsum_dtypes(x):
    """(accumulate dtype, result dtype) of a cumsum of ``x``: NumPy's, narrowed to 32 bits."""
    if x.dtype == np.float64:
        return np.float64, np.float64
    d = get_dtype(x.dtype)
    if d.is_float:
        return np.float32, x.dtype
    acc = np.uint32 if d.np_dtype.kind == "u" else np.int32
    return acc, acc


def _cumsum(x, axis=-1):
    """Inclusive prefix sum along axis (log2(n) doubling steps; exact for integers)."""
    acc, out = _cumsum_dtypes(x)
    y = x.astype(acc)
    ax = axis % x.ndim
    n = x.shape[ax]
    pre = (slice(None),) * ax
    s = 1
    while s < n:
        y = np.concatenate(
            [y[pre + (slice(0, s),)], y[pre + (slice(s, n),)] + y[pre + (slice(0, n - s),)]], axis=ax
        )
        s *= 2
    return y.astype(out)


ArgmaxOp = define_op("argmax", _argmax, numpy="np.argmax(x, axis, keepdims=keepdims) as int32")
ArgminOp = define_op("argmin", _argmin, numpy="np.argmin(x, axis, keepdims=keepdims) as int32")
CumsumOp = define_op("cumsum", _cumsum, numpy="np.cumsum(x, axis), dtype narrowed to 32 bits")

SHIPPED = (ArgmaxOp, ArgminOp, CumsumOp)
