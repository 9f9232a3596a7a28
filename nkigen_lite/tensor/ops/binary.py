"""Elementwise binary tensor ops (NumPy broadcasting and promotion), one class per op."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...ir.registry import table
from ...ir.traits import Commutative, Elementwise, Pure
from .. import rules
from ..types import TensorType
from .base import Needs, TensorOp, elementwise_class, tensor_types

BINARY_OPS: dict[str, type[BinaryOp]] = table()
"""Elementwise binary op classes by short name (``add``)."""

CATEGORIES = ("arith", "compare", "logical", "bitwise")
_DTYPE_DOC = {
    "arith": "promotion (§1)",
    "compare": "bool",
    "logical": "bool",
    "bitwise": "ints and bool only; promotion",
}


class BinaryOp(TensorOp):
    """Elementwise op of two tensors with NumPy broadcasting and dtype promotion."""

    traits = frozenset({Pure, Elementwise})
    ufunc: ClassVar = None  # the NumPy ufunc: dtype rule and reference
    category: ClassVar[str] = "arith"  # one of CATEGORIES: how bf16 / fp8 / tf32 promote

    __slots__ = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("name"):
            BINARY_OPS[cls.short_name()] = cls

    @classmethod
    def infer(cls, types, _attrs):
        a, b = tensor_types(cls.name, types, 2)
        shape = rules.broadcast_shapes(cls.name, a.shape, b.shape)
        dtype = rules.binary_dtype(cls.name, cls.ufunc, cls.category, a.dtype, b.dtype)
        return [TensorType(shape, dtype)]


def _binary(
    short: str,
    ufunc,
    alu: str,
    doc: str,
    category: str = "arith",
    commutative: bool = False,
    numpy: str = "",
    examples=(),
    aliases=(),
) -> type[BinaryOp]:
    """``tensor.<short>``: NumPy's ``ufunc`` (also its reference and trace), ALU operator ``alu``."""
    traits = frozenset({Pure, Elementwise} | ({Commutative} if commutative else set()))
    return elementwise_class(
        BinaryOp,
        short,
        doc,
        ufunc=ufunc,
        reference=ufunc,
        category=category,
        traits=traits,
        numpy=numpy or f"np.{ufunc.__name__}",
        dtype_doc=_DTYPE_DOC[category],
        needs=Needs("alu", alu),
        traced_from=(ufunc,),
        examples=examples,
        aliases=aliases,
    )


AddOp = _binary("add", np.add, "add", "a + b.", commutative=True, examples=(((2.0, 3.0), 5.0),))
SubOp = _binary(
    "sub", np.subtract, "subtract", "a - b.", aliases=("subtract",), examples=(((2.0, 3.0), -1.0),)
)
MulOp = _binary(
    "mul",
    np.multiply,
    "multiply",
    "a * b.",
    commutative=True,
    aliases=("multiply",),
    examples=(((2.0, 3.0), 6.0),),
)
DivOp = _binary(
    "div",
    np.true_divide,
    "divide",
    "a / b (true division).",
    aliases=("divide", "true_divide"),
    examples=(((3.0, 2.0), 1.5),),
)
PowOp = _binary(
    "pow", np.power, "power", "a ** b.", aliases=("power",), examples=(((2.0, 3.0), 8.0), ((4.0, 0.5), 2.0))
)
MaximumOp = _binary(
    "maximum",
    np.maximum,
    "maximum",
    "Elementwise max (NaN wins).",
    commutative=True,
    examples=(((2.0, 3.0), 3.0),),
)
MinimumOp = _binary(
    "minimum",
    np.minimum,
    "minimum",
    "Elementwise min (NaN wins).",
    commutative=True,
    examples=(((2.0, 3.0), 2.0),),
)
FloorDivideOp = _binary(
    "floor_divide",
    np.floor_divide,
    "floor_divide",
    "floor(a / b), NumPy semantics.",
    examples=(((-7.0, 2.0), -4.0),),
)
ModOp = _binary(
    "mod",
    np.remainder,
    "mod",
    "a - floor(a / b) * b (sign of b), NumPy semantics.",
    aliases=("remainder",),
    examples=(((-7.0, 2.0), 1.0), ((7.0, -2.0), -1.0)),
)
BitwiseAndOp = _binary(
    "bitwise_and", np.bitwise_and, "bitwise_and", "a & b.", "bitwise", True, examples=(((12, 10), 8),)
)
BitwiseOrOp = _binary(
    "bitwise_or", np.bitwise_or, "bitwise_or", "a | b.", "bitwise", True, examples=(((12, 10), 14),)
)
BitwiseXorOp = _binary(
    "bitwise_xor", np.bitwise_xor, "bitwise_xor", "a ^ b.", "bitwise", True, examples=(((12, 10), 6),)
)
LogicalAndOp = _binary(
    "logical_and",
    np.logical_and,
    "logical_and",
    "a and b (bool result).",
    "logical",
    True,
    examples=(((True, False), False), ((True, True), True)),
)
LogicalOrOp = _binary(
    "logical_or",
    np.logical_or,
    "logical_or",
    "a or b (bool result).",
    "logical",
    True,
    examples=(((True, False), True), ((False, False), False)),
)
LogicalXorOp = _binary(
    "logical_xor",
    np.logical_xor,
    "logical_xor",
    "a xor b (bool result).",
    "logical",
    True,
    examples=(((True, True), False), ((True, False), True)),
)
EqualOp = _binary(
    "equal", np.equal, "equal", "a == b.", "compare", True, examples=(((2.0, 2.0), True), ((2.0, 3.0), False))
)
NotEqualOp = _binary(
    "not_equal", np.not_equal, "not_equal", "a != b.", "compare", True, examples=(((2.0, 3.0), True),)
)
LessOp = _binary("less", np.less, "less", "a < b.", "compare", examples=(((2.0, 3.0), True),))
LessEqualOp = _binary(
    "less_equal", np.less_equal, "less_equal", "a <= b.", "compare", examples=(((3.0, 3.0), True),)
)
GreaterOp = _binary("greater", np.greater, "greater", "a > b.", "compare", examples=(((2.0, 3.0), False),))
GreaterEqualOp = _binary(
    "greater_equal", np.greater_equal, "greater_equal", "a >= b.", "compare", examples=(((3.0, 3.0), True),)
)

__all__ = ["BINARY_OPS", "BinaryOp", *(c.__name__ for c in BINARY_OPS.values())]
