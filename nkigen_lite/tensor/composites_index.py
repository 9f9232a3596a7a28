"""Composite ops about positions along an axis: argmax, argmin (first index of the extreme)
and cumsum (inclusive prefix sum), each defined by a NumPy function (``define_op``).

``cumsum`` adds in log2(n) doubling steps (step s adds the value s places before), so every
add is an exact integer add for integer inputs (int32 results wrap like NumPy's int32 sums);
floats narrower than f32 are summed in f32 and rounded back to their dtype.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import get_dtype
from .ops.composite import define_op


def _argmax(x, axis=-1, keepdims=False):
    """Index (int32) of the first maximum along axis; a NaN counts as the maximum."""
    return np.argmax(x, axis=axis, keepdims=keepdims).astype(np.int32)


def _argmin(x, axis=-1, keepdims=False):
    """Index (int32) of the first minimum along axis; a NaN counts as the minimum."""
    return np.argmin(x, axis=axis, keepdims=keepdims).astype(np.int32)


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
