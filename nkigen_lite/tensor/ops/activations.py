"""silu, softplus and gelu (erf form): composite ops with a native ScalarE activation.

Each is defined, like every composite (``composite.py``), by its NumPy expansion: that
function is the op's reference (the tensor interpreter), and decompose inlines its trace when
the target has no activation function of the op's name. Each is also an elementwise unary op
(``UnaryOp`` first in its bases), so on a target that has the function (trn2: ``silu``,
``softplus``, ``gelu``) decompose keeps it and the lowering's activation table
(``transforms/lower/tile_common.py``, ``ACT_FUNC``) maps it onto that one instruction, fused
with its neighbours like any unary op.

Dtypes are the float-valued unary rule (float kept; int/bool → NumPy's float: i8, u8, bool →
f16, wider → f32); the expansion computes in f32 (float64 for float64 NumPy arrays) and rounds
once to that dtype, as the activation engine does.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir import special
from ...ir.dtypes import get_dtype
from .. import rules
from .base import Needs
from .composite import define_op
from .unary import _FLOAT_VALUED, UnaryOp


def _work(x):
    """The dtype to compute in: f32, or float64 for float64 NumPy arrays."""
    return np.float64 if x.dtype == np.float64 else np.float32


def _result(x):
    """The float-valued unary dtype rule: a float input's dtype, else NumPy's float for it."""
    if x.dtype == np.float64:
        return np.float64
    dt = get_dtype(x.dtype)
    if dt.is_float:
        return x.dtype
    return rules.unary_dtype("activation", None, True, dt).np_dtype


def _erf(x):
    """erf elementwise: ``tensor.erf`` on a traced array, the float64 series on NumPy arrays."""
    from ..trace_array import TracedArray

    if isinstance(x, TracedArray):
        return TracedArray(x.builder.unary("erf", x.value))
    return special.erf(x).astype(x.dtype)


def _silu(x):
    """x * sigmoid(x) = x * (1 / (1 + exp(-x))) (the product form, rounded as users write it)."""
    xf = x.astype(_work(x))
    return (xf * (1.0 / (1.0 + np.exp(-xf)))).astype(_result(x))


def _softplus(x):
    """log(1 + exp(x)), as np.logaddexp(0, x) (no overflow for large x)."""
    xf = x.astype(_work(x))
    return np.logaddexp(0.0, xf).astype(_result(x))


_RSQRT2 = 1.0 / math.sqrt(2.0)


def _gelu(x):
    """x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)): GELU, exact (erf) form."""
    xf = x.astype(_work(x))
    return (0.5 * xf * (1.0 + _erf(xf * _RSQRT2))).astype(_result(x))


def _activation(name: str, fn, doc: str, numpy: str, examples):
    return define_op(
        name,
        fn,
        doc=doc,
        numpy=numpy,
        dtype_doc=_FLOAT_VALUED,
        native=(UnaryOp, Needs("act", name), {"float_only": True, "examples": examples}),
    )


SiluOp = _activation(
    "silu",
    _silu,
    "x * sigmoid(x).",
    "x * (1 / (1 + np.exp(-x)))",
    (((0.0,), 0.0), ((2.0,), 2 / (1 + math.exp(-2.0)))),
)
SoftplusOp = _activation(
    "softplus",
    _softplus,
    "log(1 + exp(x)).",
    "np.logaddexp(0, x)",
    (((0.0,), math.log(2.0)), ((1.0,), math.log1p(math.e))),
)
GeluOp = _activation(
    "gelu",
    _gelu,
    "x * Phi(x) (exact, erf-based).",
    "0.5 x (1 + erf(x / √2))",
    (((0.0,), 0.0), ((1.0,), 0.5 * (1 + math.erf(1 / math.sqrt(2.0))))),
)

ACTIVATION_COMPOSITES = (SiluOp, SoftplusOp, GeluOp)
