"""The composite ops nkigen_lite ships, each defined by a NumPy function (``define_op``).

Floats narrower than f32 are computed in f32 and the result is rounded back to the input's
dtype, as the engines do; integer and bool inputs give f32 results. On NumPy arrays
(``nk.ops``) float64 inputs are computed and returned in float64. Reductions run along one
``axis``; ``eps`` is added to the variance (rms_norm: the mean square) before the square root.
Rows that are all ``-inf`` give NaN in softmax, log_softmax and logsumexp (the shift by the row
maximum is ``-inf - -inf``).
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.dtypes import get_dtype
from .ops.activations import ACTIVATION_COMPOSITES
from .ops.composite import define_op


def _work(x):
    """The dtype to compute in: f32, or f64 for float64 NumPy arrays (a trace never has f64)."""
    return np.float64 if x.dtype == np.float64 else np.float32


def _result_dtype(x):
    """The input's dtype when it is a float (float64 NumPy arrays included), else f32."""
    if x.dtype == np.float64:
        return x.dtype
    return x.dtype if get_dtype(x.dtype).is_float else np.float32


def _softmax(x, axis=-1):
    """exp(x - max(x)) / sum(exp(x - max(x))) along axis."""
    xf = x.astype(_work(x))
    e = np.exp(xf - xf.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(_result_dtype(x))


def _log_softmax(x, axis=-1):
    """(x - max(x)) - log(sum(exp(x - max(x)))) along axis."""
    xf = x.astype(_work(x))
    s = xf - xf.max(axis=axis, keepdims=True)
    return (s - np.log(np.exp(s).sum(axis=axis, keepdims=True))).astype(_result_dtype(x))


def _logsumexp(x, axis=-1, keepdims=False):
    """log(sum(exp(x))) along axis, computed as max(x) + log(sum(exp(x - max(x))))."""
    xf = x.astype(_work(x))
    m = xf.max(axis=axis, keepdims=True)
    r = np.log(np.exp(xf - m).sum(axis=axis, keepdims=True)) + m
    if not keepdims:
        r = np.squeeze(r, axis=axis)
    return r.astype(_result_dtype(x))


def _rms_norm(x, axis=-1, eps=1e-6):
    """x / sqrt(mean(x * x) + eps) along axis (no weight: multiply the result by it)."""
    xf = x.astype(_work(x))
    return (xf / np.sqrt((xf * xf).mean(axis=axis, keepdims=True) + eps)).astype(_result_dtype(x))


def _layer_norm(x, axis=-1, eps=1e-5):
    """(x - mean(x)) / sqrt(var(x) + eps) along axis (no affine: scale and shift the result)."""
    xf = x.astype(_work(x))
    d = xf - xf.mean(axis=axis, keepdims=True)
    return (d / np.sqrt((d * d).mean(axis=axis, keepdims=True) + eps)).astype(_result_dtype(x))


_K = math.sqrt(2.0 / math.pi)


def _gelu_tanh(x):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GELU, tanh form."""
    xf = x.astype(_work(x))
    return (0.5 * xf * (1.0 + np.tanh(_K * (xf + 0.044715 * (xf * xf * xf))))).astype(_result_dtype(x))


SoftmaxOp = define_op("softmax", _softmax, numpy="exp(x - max) / sum(exp(x - max)) along axis")
LogSoftmaxOp = define_op("log_softmax", _log_softmax, numpy="(x - max) - log(sum(exp(x - max))) along axis")
LogsumexpOp = define_op("logsumexp", _logsumexp, numpy="scipy.special.logsumexp(x, axis, keepdims)")
RmsNormOp = define_op("rms_norm", _rms_norm, numpy="x / sqrt(mean(x**2, axis) + eps)")
LayerNormOp = define_op("layer_norm", _layer_norm, numpy="(x - mean(x, axis)) / sqrt(var(x, axis) + eps)")
GeluTanhOp = define_op("gelu_tanh", _gelu_tanh, numpy="0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))")

SHIPPED = (*ACTIVATION_COMPOSITES, SoftmaxOp, LogSoftmaxOp, LogsumexpOp, RmsNormOp, LayerNormOp, GeluTanhOp)
"""silu, softplus and gelu (erf) are defined in tensor/ops/activations.py (they are unary ops too)."""

from . import composites_index  # noqa: E402  (argmax, argmin, cumsum)

SHIPPED += composites_index.SHIPPED
