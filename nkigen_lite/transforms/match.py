"""Small matching and building helpers shared by the tensor passes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.dtypes import DType
from ..ir.errors import BuildError
from ..ir.op import Op
from ..ir.rewrite import Rewriter
from ..ir.traits import Commutative
from ..ir.value import Value
from ..tensor import ops as T
from ..tensor.types import TensorType


def def_op(v: Value, cls: type | tuple[type, ...]) -> Op | None:
    """The op defining ``v`` when it is an instance of ``cls``, else None."""
    op = v.defining_op
    return op if isinstance(op, cls) else None


def uniform_scalar(arr: np.ndarray, dtype: DType) -> Any:
    """The Python scalar every element of ``arr`` holds bit-for-bit, or None."""
    a = np.ascontiguousarray(arr)
    if a.size == 0:
        return None
    raw = a.view(np.uint8).reshape(a.size, -1)
    if not (raw == raw[0]).all():
        return None
    return dtype.python_value(a.reshape(-1)[0])


def splat_value(v: Value) -> Any:
    """The scalar ``v`` holds in every element when it is a constant splat (a ``full``, a
    uniform ``constant``, or a shape op of one), else None."""
    op = v.defining_op
    if isinstance(op, T.FullOp):
        return op.attrs["value"]
    if isinstance(op, T.ConstantOp):
        return uniform_scalar(op.attrs["value"].array, v.dtype)
    if isinstance(op, (T.BroadcastToOp, T.ReshapeOp, T.TransposeOp)):
        return splat_value(op.operand(0))
    return None


def is_splat_of(v: Value, c: float) -> bool:
    """True when ``v`` is a constant splat numerically equal to ``c`` (1 == 1.0 == True)."""
    s = splat_value(v)
    return s is not None and s == c


def is_exact_zero_term(v: Value, result: Value, sign: int) -> bool:
    """True when ``v`` is a splat zero whose addition (or subtraction) leaves the other
    operand x bit-identical in ``result``'s dtype.

    For integer and bool results any zero does. For floating results the sign matters:
    ``x + (-0.0)`` is ``x`` for every x (``-0.0 + +0.0`` is ``+0.0``, so ``x + 0.0`` is not),
    and ``x - (+0.0)`` is ``x``. ``sign`` is -1 for an added zero, +1 for a subtracted one.
    """
    s = splat_value(v)
    if s is None or s != 0:
        return False
    if not result.dtype.is_float:
        return True
    return math.copysign(1.0, float(s)) == sign


def infer_type(cls: type[Op], operands: Sequence, attrs: dict | None = None):
    """The single result type ``cls`` would infer for these operands (Values or types), or
    None if that would be illegal."""
    types = [v.type if isinstance(v, Value) else v for v in operands]
    try:
        return cls.infer(types, cls.check_attrs(attrs or {}))[0]
    except BuildError:
        return None


def short_name(cls: type[Op]) -> str:
    return cls.name.split(".", 1)[1]


def make(
    rw: Rewriter, cls: type[Op], operands: Sequence[Value] = (), attrs: dict | None = None, result_type=None
) -> Value:
    """Create ``cls`` at the rewriter's insertion point; its result is named after the op."""
    types = None if result_type is None else [result_type]
    return rw.create(cls, list(operands), attrs, types, name_hint=short_name(cls)).result


def full(rw: Rewriter, value, dtype: DType, shape: Sequence[int] = ()) -> Value:
    """A ``tensor.full`` of ``value`` (converted to the dtype's Python type)."""
    return rw.create(
        T.FullOp, (), {"value": dtype.python_value(value)}, [TensorType(tuple(shape), dtype)], name_hint="c"
    ).result


def replace(rw: Rewriter, op: Op, new: Value) -> bool:
    """Replace ``op``'s single result by ``new`` (types must match) and report a rewrite."""
    rw.replace_op(op, [new])
    return True


def commuted(op: Op) -> list[tuple[Value, Value]]:
    """Operand pairs to try for a binary op: as written, and swapped when it commutes."""
    a, b = op.operands
    pairs = [(a, b)]
    if op.has_trait(Commutative):
        pairs.append((b, a))
    return pairs
