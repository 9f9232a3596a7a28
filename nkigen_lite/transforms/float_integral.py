"""Float values known to hold integers: a float -> int cast of one needs no truncation.

``pow2_multiple(v)`` is an exponent ``t`` such that every element of ``v`` is a multiple of
``2**t`` (None when unknown). It follows casts from integers (an integer is a multiple of 1,
a bitwise and with a constant mask of ``2**t``), float casts, multiplies by constants,
adds / subtracts (the smaller exponent), multiplies and matmuls (the sum of the exponents),
neg / abs / maximum / minimum / where, data movement and sum / max / min reductions (a sum of
multiples of ``2**t`` is one, rounded or not). Rounding to nearest keeps the
property: the rounded result of a multiple of ``2**t`` is the value itself when it is
representable, else a multiple of the float spacing there, itself a larger power of two.

A float value with ``t >= 0`` is integral (``is_integral``): the engines' round-to-nearest
copy to an integer dtype is then NumPy's truncating cast (both saturate alike).
"""

from __future__ import annotations

import math

from ..tensor import ops as T
from .layout.ops import LayoutConvertOp

_MOVEMENT = (T.ReshapeOp, T.BroadcastToOp, T.SliceOp, T.TransposeOp, LayoutConvertOp)
_NONE = 64  # the exponent of a zero constant: a multiple of every power of two used here


def _const_exponent(x) -> int | None:
    """t with the finite constant x a multiple of 2**t, or None."""
    x = float(x)
    if x == 0:
        return _NONE
    if not math.isfinite(x):
        return None
    m, e = math.frexp(abs(x))  # |x| = m * 2**e, 0.5 <= m < 1
    t = e - 53
    while t < e and (abs(x) / 2.0 ** (t + 1)).is_integer():
        t += 1
    return t


def _int_exponent(v, depth: int) -> int:
    """t with every element of the integer or bool value ``v`` a multiple of 2**t (0 unless
    a bitwise and with a constant mask, or a constant)."""
    op = v.defining_op
    if op is None or depth <= 0:
        return 0
    if isinstance(op, T.FullOp):
        return max(0, _const_exponent(op.attrs["value"]) or 0)
    if isinstance(op, T.BitwiseAndOp):
        return max(_int_exponent(u, depth - 1) for u in op.operands)
    if isinstance(op, (T.CastOp, *_MOVEMENT)) and (op.operand(0).dtype.is_int or op.operand(0).dtype.is_bool):
        return _int_exponent(op.operand(0), depth - 1)
    return 0


def pow2_multiple(v, depth: int = 12) -> int | None:
    """An exponent t with every element of the value ``v`` a multiple of 2**t, or None."""
    if v.dtype.is_int or v.dtype.is_bool:
        return _int_exponent(v, depth)
    op = v.defining_op
    if op is None or depth <= 0:
        return None
    sub = [pow2_multiple(u, depth - 1) for u in op.operands] if op.operands else []
    if isinstance(op, T.FullOp):
        return _const_exponent(op.attrs["value"])
    if isinstance(op, (T.CastOp, *_MOVEMENT, T.NegOp, T.AbsOp)):
        return sub[0]
    if isinstance(op, (T.AddOp, T.SubOp, T.MaximumOp, T.MinimumOp)):
        return None if None in sub else min(sub)
    if isinstance(op, T.WhereOp):
        return None if None in sub[1:] else min(sub[1:])
    if isinstance(op, (T.MulOp, T.MatmulOp)):
        return None if None in sub else min(_NONE, sum(sub))
    if isinstance(op, T.ReduceOp) and op.attrs["kind"] in ("sum", "max", "min"):
        return sub[0]
    return None


def is_integral(v) -> bool:
    """Whether every element of the value ``v`` is known to be an integer (or +-inf)."""
    t = pow2_multiple(v)
    return t is not None and t >= 0
