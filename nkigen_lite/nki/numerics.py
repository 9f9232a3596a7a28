"""NumPy definitions of the ALU operators and ScalarE activation functions (fp32 in, fp32 out)."""

from __future__ import annotations

import numpy as np

from ..ir import special

_SQRT_2_OVER_PI = np.float32(np.sqrt(2.0 / np.pi))
_TWO_OVER_SQRT_PI = np.float32(2.0 / np.sqrt(np.pi))
_INV_SQRT_2PI = np.float32(1.0 / np.sqrt(2.0 * np.pi))


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _gelu_dx(x):
    cdf = 0.5 * (1.0 + special.erf(x / np.float32(np.sqrt(2.0))))
    return cdf + x * _INV_SQRT_2PI * np.exp(-0.5 * x * x)


def _silu_dx(x):
    s = special.sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


ACTIVATIONS = {
    "copy": lambda x: x,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": special.rsqrt,
    "reciprocal": special.reciprocal,
    "tanh": np.tanh,
    "sigmoid": special.sigmoid,
    "silu": special.silu,
    "silu_dx": _silu_dx,
    "gelu": special.gelu,
    "gelu_dx": _gelu_dx,
    "gelu_apprx_tanh": lambda x: (
        0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + np.float32(0.044715) * x**3)))
    ),
    "gelu_apprx_sigmoid": lambda x: x * special.sigmoid(np.float32(1.702) * x),
    "relu": special.relu,
    "square": np.square,
    "erf": special.erf,
    "erf_dx": lambda x: _TWO_OVER_SQRT_PI * np.exp(-x * x),
    "softplus": special.softplus,
    "mish": lambda x: x * np.tanh(special.softplus(x)),
    "sin": np.sin,
    "arctan": np.arctan,
    "sign": np.sign,
    "abs": np.abs,
}


def activation(func: str, x: np.ndarray) -> np.ndarray:
    """Apply an activation function to fp32 data, returning fp32."""
    with np.errstate(all="ignore"):
        return _f32(ACTIVATIONS[func](x))


def _truth(x):
    return x != 0


ARITH = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
    "abs_min": lambda a, b: np.minimum(np.abs(a), np.abs(b)),
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "logical_and": lambda a, b: _truth(a) & _truth(b),
    "logical_or": lambda a, b: _truth(a) | _truth(b),
    "logical_xor": lambda a, b: _truth(a) ^ _truth(b),
}


def alu(op: str, a, b, work: np.dtype) -> np.ndarray:
    """A non-bitwise ALU op computed in ``work`` (float32, or int64 for exact GpSimd integers);
    comparisons and logical ops give 1 / 0 in ``work``."""
    with np.errstate(all="ignore"):
        return np.asarray(ARITH[op](a, b)).astype(work, copy=False)


def bitvec(op: str, a, b, bits: int) -> np.ndarray:
    """A bitwise op on ``bits``-wide integers held in int64 (shifts are logical)."""
    mask = (1 << bits) - 1
    a = np.asarray(a, np.int64) & mask
    b = np.asarray(b, np.int64)
    if op == "bitwise_and":
        return a & (b & mask)
    if op == "bitwise_or":
        return a | (b & mask)
    if op == "bitwise_xor":
        return a ^ (b & mask)
    if op == "left_shift":
        return (a << np.clip(b, 0, 63)) & mask
    return a >> np.clip(b, 0, 63)


REDUCE = {
    "add": lambda x: np.sum(x, axis=-1, dtype=x.dtype),
    "multiply": lambda x: np.prod(x, axis=-1, dtype=x.dtype),
    "maximum": lambda x: np.max(x, axis=-1),
    "minimum": lambda x: np.min(x, axis=-1),
    "logical_and": lambda x: np.all(x != 0, axis=-1),
    "logical_or": lambda x: np.any(x != 0, axis=-1),
    "logical_xor": lambda x: np.logical_xor.reduce(x != 0, axis=-1),
    "bitwise_and": lambda x: np.bitwise_and.reduce(x, axis=-1),
    "bitwise_or": lambda x: np.bitwise_or.reduce(x, axis=-1),
    "bitwise_xor": lambda x: np.bitwise_xor.reduce(x, axis=-1),
}
