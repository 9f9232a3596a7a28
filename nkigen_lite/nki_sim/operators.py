"""ALU operator tokens (op=nl.add, ...) and activation function tokens (op=nl.exp, ...).

In NKI these are ``nki.language`` functions that double as operator tokens. Here they are
token objects carrying their identity and NumPy semantics; calling one as a function raises,
because the simulator covers the ``nki.isa`` instructions, not the ``nl`` convenience ops.
"""

from __future__ import annotations

import math

import numpy as np

from . import limits
from .errors import NkiSimError


class _Token:
    __slots__ = ("name",)

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    def __call__(self, *_args, **_kwargs):
        raise NkiSimError(
            f"nl.{self.name}(...) as a function is not simulated: pass nl.{self.name} as an op= "
            "token to a nisa instruction"
        )


class AluOp(_Token):
    """A binary ALU operator; kind is 'arith', 'compare', 'logical', 'bitvec' or 'bypass'."""

    __slots__ = ("kind", "_fn", "_reduce")

    def __init__(self, name: str, kind: str, fn, reduce=None):
        self.name = name
        self.kind = kind
        self._fn = fn
        self._reduce = reduce

    @property
    def is_bitvec(self) -> bool:
        return self.kind == "bitvec"

    @property
    def can_reduce(self) -> bool:
        return self._reduce is not None

    def apply(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Elementwise a op b on float32 arrays (or int64 arrays for exact/bitvec paths)."""
        with np.errstate(all="ignore"):
            return self._fn(a, b)

    def reduce(self, x: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
        """Reduce x over the given axes (float64 for arithmetic, int64 for bitvec)."""
        with np.errstate(all="ignore"):
            return self._reduce(x, axis)


def _cmp(f):
    return lambda a, b: f(a, b).astype(np.result_type(a, b))


def _logical(f):
    return lambda a, b: f(a != 0, b != 0).astype(np.result_type(a, b))


def _bit_reduce(f):
    return lambda x, axis: f.reduce(x.reshape(x.shape[: x.ndim - len(axis)] + (-1,)), axis=-1)


def _logical_reduce(f):
    return lambda x, axis: _bit_reduce(f)((x != 0).astype(np.int64), axis).astype(np.float64)


add = AluOp("add", "arith", np.add, lambda x, ax: np.sum(x, axis=ax, dtype=np.float64))
subtract = AluOp("subtract", "arith", np.subtract)
multiply = AluOp("multiply", "arith", np.multiply, lambda x, ax: np.prod(x, axis=ax, dtype=np.float64))
maximum = AluOp("maximum", "arith", np.maximum, lambda x, ax: np.max(x, axis=ax))
minimum = AluOp("minimum", "arith", np.minimum, lambda x, ax: np.min(x, axis=ax))
power = AluOp("power", "arith", np.power)
abs_max = AluOp("abs_max", "arith", lambda a, b: np.maximum(np.abs(a), np.abs(b)))
abs_min = AluOp("abs_min", "arith", lambda a, b: np.minimum(np.abs(a), np.abs(b)))
equal = AluOp("equal", "compare", _cmp(np.equal))
not_equal = AluOp("not_equal", "compare", _cmp(np.not_equal))
greater = AluOp("greater", "compare", _cmp(np.greater))
greater_equal = AluOp("greater_equal", "compare", _cmp(np.greater_equal))
less = AluOp("less", "compare", _cmp(np.less))
less_equal = AluOp("less_equal", "compare", _cmp(np.less_equal))
logical_and = AluOp("logical_and", "logical", _logical(np.logical_and), _logical_reduce(np.bitwise_and))
logical_or = AluOp("logical_or", "logical", _logical(np.logical_or), _logical_reduce(np.bitwise_or))
logical_xor = AluOp("logical_xor", "logical", _logical(np.logical_xor), _logical_reduce(np.bitwise_xor))
bitwise_and = AluOp("bitwise_and", "bitvec", np.bitwise_and, _bit_reduce(np.bitwise_and))
bitwise_or = AluOp("bitwise_or", "bitvec", np.bitwise_or, _bit_reduce(np.bitwise_or))
bitwise_xor = AluOp("bitwise_xor", "bitvec", np.bitwise_xor, _bit_reduce(np.bitwise_xor))
left_shift = AluOp("left_shift", "bitvec", np.left_shift)
right_shift = AluOp("right_shift", "bitvec", np.right_shift)
bypass = AluOp("bypass", "bypass", lambda a, _b: a)

ALU_OPS = (
    add,
    subtract,
    multiply,
    maximum,
    minimum,
    power,
    abs_max,
    abs_min,
    equal,
    not_equal,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_or,
    logical_xor,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    left_shift,
    right_shift,
    bypass,
)


class ActivationFunction(_Token):
    """A ScalarE activation function; domain (lo, hi) is enforced when the chip has no range reduction."""

    __slots__ = ("_fn", "domain")

    def __init__(self, name: str, fn, domain=None):
        self.name = name
        self._fn = fn
        self.domain = domain

    def apply(self, x: np.ndarray, where: str) -> np.ndarray:
        """f(x) for float32 x, computed in float64 and rounded to float32."""
        if self.domain is not None:
            lo, hi = self.domain
            bad = ~((x >= lo) & (x <= hi)) & ~np.isnan(x)  # NaN is no range: it propagates
            if bad.any():
                v = float(x[bad].flat[0])
                raise NkiSimError(
                    f"{where}: nl.{self.name} input {v} outside [{lo:.6g}, {hi:.6g}]; ScalarE has "
                    "no range reduction for it [SHARED]"
                )
        with np.errstate(all="ignore"):
            return self._fn(x.astype(np.float64)).astype(np.float32)


_erf = np.frompyfunc(math.erf, 1, 1)


def erf_f64(x: np.ndarray) -> np.ndarray:
    """Gauss error function, elementwise via math.erf."""
    return np.asarray(_erf(x), dtype=np.float64)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


copy = ActivationFunction("copy", lambda x: x)
exp = ActivationFunction("exp", np.exp)
log = ActivationFunction("log", np.log)
sqrt = ActivationFunction("sqrt", np.sqrt)
rsqrt = ActivationFunction("rsqrt", lambda x: 1.0 / np.sqrt(x))
reciprocal = ActivationFunction("reciprocal", lambda x: 1.0 / x)
tanh = ActivationFunction("tanh", np.tanh)
sigmoid = ActivationFunction("sigmoid", _sigmoid)
silu = ActivationFunction("silu", lambda x: x * _sigmoid(x))
gelu = ActivationFunction("gelu", lambda x: 0.5 * x * (1.0 + erf_f64(x / math.sqrt(2.0))))
gelu_apprx_tanh = ActivationFunction(
    "gelu_apprx_tanh", lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
)
gelu_dx = ActivationFunction(
    "gelu_dx",
    lambda x: 0.5 * (1.0 + erf_f64(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi),
)
gelu_apprx_sigmoid = ActivationFunction("gelu_apprx_sigmoid", lambda x: x * _sigmoid(1.702 * x))
silu_dx = ActivationFunction("silu_dx", lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))))
erf_dx = ActivationFunction("erf_dx", lambda x: 2.0 / math.sqrt(math.pi) * np.exp(-x * x))
mish = ActivationFunction("mish", lambda x: x * np.tanh(np.logaddexp(0.0, x)))
relu = ActivationFunction("relu", lambda x: np.maximum(x, 0.0))
square = ActivationFunction("square", np.square)
erf = ActivationFunction("erf", erf_f64)
softplus = ActivationFunction("softplus", lambda x: np.logaddexp(0.0, x))
sin = ActivationFunction("sin", np.sin, limits.SIN_DOMAIN)
arctan = ActivationFunction("arctan", np.arctan, limits.ARCTAN_DOMAIN)
sign = ActivationFunction("sign", np.sign)
abs = ActivationFunction("abs", np.abs)  # noqa: A001 - NKI's name

ACTIVATION_FUNCTIONS = (
    copy,
    exp,
    log,
    sqrt,
    rsqrt,
    reciprocal,
    tanh,
    sigmoid,
    silu,
    silu_dx,
    gelu,
    gelu_dx,
    gelu_apprx_tanh,
    gelu_apprx_sigmoid,
    relu,
    square,
    erf,
    erf_dx,
    softplus,
    mish,
    sin,
    arctan,
    sign,
    abs,
)
