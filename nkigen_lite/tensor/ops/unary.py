"""Elementwise unary tensor ops: one class per op with all its facts (see ``base.py``)."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from ...ir import special
from ...ir.registry import table
from ...ir.traits import Elementwise, Pure
from .. import rules
from .base import Needs, TensorOp, elementwise_class, tensor_types

UNARY_OPS: dict[str, type[UnaryOp]] = table()
"""Elementwise unary op classes by short name (``exp``)."""


class UnaryOp(TensorOp):
    """Elementwise op of one tensor."""

    traits = frozenset({Pure, Elementwise})
    ufunc: ClassVar = None  # a NumPy function with the op's result dtype (dtype rule only)
    float_only: ClassVar[bool] = False

    __slots__ = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("name"):
            UNARY_OPS[cls.short_name()] = cls

    @classmethod
    def infer(cls, types, _attrs):
        (x,) = tensor_types(cls.name, types, 1)
        return [x.with_dtype(rules.unary_dtype(cls.name, cls.ufunc, cls.float_only, x.dtype))]


_FLOAT_VALUED = "float kept; int/bool → NumPy's float (i8, u8, bool → f16; wider → f32)"


def _float(short, doc, reference, numpy, act=None, traced=(), examples=(), aliases=()):
    """A float-valued op (like np.exp) computed by the ScalarE activation function ``act``."""
    return elementwise_class(
        UnaryOp,
        short,
        doc,
        reference=reference,
        numpy=numpy,
        float_only=True,
        dtype_doc=_FLOAT_VALUED,
        needs=Needs("act", act or short),
        traced_from=traced,
        examples=examples,
        aliases=aliases,
    )


def _numpy(
    short, doc, ufunc, numpy, needs, dtype_doc="NumPy's", traced=(), examples=(), aliases=(), reference=None
):
    """An op whose result dtype is NumPy's for ``ufunc``."""
    return elementwise_class(
        UnaryOp,
        short,
        doc,
        reference=reference or ufunc,
        ufunc=ufunc,
        numpy=numpy,
        dtype_doc=dtype_doc,
        needs=needs,
        traced_from=traced,
        examples=examples,
        aliases=aliases,
    )


ExpOp = _float("exp", "e**x.", np.exp, "np.exp", traced=(np.exp,), examples=(((0.0,), 1.0), ((1.0,), math.e)))
LogOp = _float(
    "log",
    "Natural logarithm.",
    np.log,
    "np.log",
    traced=(np.log,),
    examples=(((1.0,), 0.0), ((math.e,), 1.0)),
)
SqrtOp = _float(
    "sqrt",
    "Square root.",
    np.sqrt,
    "np.sqrt",
    traced=(np.sqrt,),
    examples=(((4.0,), 2.0), ((2.0,), math.sqrt(2.0))),
)
RsqrtOp = _float(
    "rsqrt",
    "1 / sqrt(x).",
    special.rsqrt,
    "1 / np.sqrt(x)",
    examples=(((4.0,), 0.5), ((2.0,), 1 / math.sqrt(2.0))),
)
ReciprocalOp = _float(
    "reciprocal",
    "1 / x (in floating point).",
    special.reciprocal,
    "1.0 / x (true division)",
    examples=(((4.0,), 0.25), ((-2.0,), -0.5)),
)
TanhOp = _float(
    "tanh",
    "Hyperbolic tangent.",
    np.tanh,
    "np.tanh",
    traced=(np.tanh,),
    examples=(((0.0,), 0.0), ((1.0,), math.tanh(1.0))),
)
SigmoidOp = _float(
    "sigmoid",
    "1 / (1 + exp(-x)).",
    special.sigmoid,
    "1 / (1 + np.exp(-x))",
    examples=(((0.0,), 0.5), ((2.0,), 1 / (1 + math.exp(-2.0)))),
)
ErfOp = _float(
    "erf",
    "Gauss error function.",
    special.erf,
    "math.erf elementwise",
    examples=(((0.0,), 0.0), ((0.5,), math.erf(0.5)), ((-2.0,), math.erf(-2.0))),
)
SinOp = _float(
    "sin", "Sine.", np.sin, "np.sin", traced=(np.sin,), examples=(((0.0,), 0.0), ((math.pi / 2,), 1.0))
)
CosOp = _float(
    "cos", "Cosine.", np.cos, "np.cos", traced=(np.cos,), examples=(((0.0,), 1.0), ((math.pi,), -1.0))
)
ArctanOp = _float(
    "arctan",
    "Inverse tangent.",
    np.arctan,
    "np.arctan",
    traced=(np.arctan,),
    examples=(((1.0,), math.pi / 4), ((0.0,), 0.0)),
)
ReluOp = _numpy(
    "relu",
    "max(x, 0).",
    special.relu,
    "max(x, 0)",
    Needs("act", "relu"),
    dtype_doc="operand dtype",
    examples=(((-2.0,), 0.0), ((3.0,), 3.0)),
)
AbsOp = _numpy(
    "abs",
    "Absolute value.",
    np.absolute,
    "np.absolute",
    Needs("act", "abs"),
    traced=(np.absolute,),
    aliases=("absolute",),
    examples=(((-2.0,), 2.0),),
)
SignOp = _numpy(
    "sign",
    "-1, 0 or 1 (NaN for NaN).",
    np.sign,
    "np.sign",
    Needs("act", "sign"),
    dtype_doc="NumPy's (bool rejected)",
    traced=(np.sign,),
    examples=(((-3.0,), -1.0), ((0.0,), 0.0), ((2.0,), 1.0)),
)
FloorOp = _numpy(
    "floor",
    "Round toward -inf.",
    np.floor,
    "np.floor",
    Needs("act", "floor"),
    traced=(np.floor,),
    examples=(((-1.5,), -2.0), ((1.5,), 1.0)),
)
CeilOp = _numpy(
    "ceil",
    "Round toward +inf.",
    np.ceil,
    "np.ceil",
    Needs("act", "ceil"),
    traced=(np.ceil,),
    examples=(((-1.5,), -1.0), ((1.5,), 2.0)),
)
NegOp = _numpy(
    "neg",
    "-x.",
    np.negative,
    "np.negative",
    Needs("alu", "multiply"),  # x * -1
    dtype_doc="NumPy's (bool rejected)",
    traced=(np.negative,),
    aliases=("negative",),
    examples=(((2.0,), -2.0),),
)
SquareOp = _numpy(
    "square",
    "x * x.",
    np.square,
    "np.square",
    Needs("act", "square"),
    dtype_doc="NumPy's (square(bool) → i8)",
    traced=(np.square,),
    examples=(((-3.0,), 9.0),),
)
LogicalNotOp = _numpy(
    "logical_not",
    "not x (bool result).",
    np.logical_not,
    "np.logical_not",
    Needs("alu", "logical_xor"),  # x xor true
    dtype_doc="bool",
    traced=(np.logical_not,),
    examples=(((True,), False), ((False,), True)),
)
BitwiseNotOp = _numpy(
    "bitwise_not",
    "~x for integers and bools.",
    np.invert,
    "np.invert",
    Needs("alu", "bitwise_xor"),  # x xor all-ones
    dtype_doc="ints and bool only",
    traced=(np.invert,),
    aliases=("invert",),
    examples=(((5,), -6), ((True,), False)),
)

__all__ = ["UNARY_OPS", "UnaryOp", *(c.__name__ for c in UNARY_OPS.values())]
