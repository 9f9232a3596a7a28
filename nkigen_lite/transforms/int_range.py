"""Value ranges of integer tensor values: an interval every element is known to lie in.

Used to keep one-instruction integer arithmetic and casts where no element can leave the result
dtype's range (no wrap-around to compute). The walk follows constants, iotas, casts, bitwise
ands with a non-negative value, +, -, *, maximum / minimum, where and data movement (reshape,
broadcast, slice, transpose); anything else has its dtype's full range.
"""

from __future__ import annotations

import numpy as np

from ..tensor import ops as T

_MOVEMENT = (T.ReshapeOp, T.BroadcastToOp, T.SliceOp, T.TransposeOp)


def dtype_range(dtype) -> tuple[int, int]:
    """The integer interval of an integer or bool dtype."""
    if dtype.is_bool:
        return 0, 1
    info = np.iinfo(dtype.np_dtype)
    return int(info.min), int(info.max)


def fits(interval: tuple[int, int], dtype) -> bool:
    """Whether every integer of ``interval`` is a value of ``dtype``."""
    lo, hi = dtype_range(dtype)
    return lo <= interval[0] and interval[1] <= hi


def _arith(op, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    if isinstance(op, T.AddOp):
        return a[0] + b[0], a[1] + b[1]
    if isinstance(op, T.SubOp):
        return a[0] - b[1], a[1] - b[0]
    corners = [x * y for x in a for y in b]
    return min(corners), max(corners)


def exact_range(op, depth: int = 8) -> tuple[int, int] | None:
    """The interval of the exact (unwrapped) result of the integer add / sub / mul ``op`` from
    its operands' ranges, or None when the walk cannot bound an operand."""
    a, b = (int_range(u, depth - 1) for u in op.operands)
    return _arith(op, a, b)


def int_range(v, depth: int = 8) -> tuple[int, int]:
    """An interval holding every element of the integer or bool value ``v`` (``depth`` bounds
    the walk)."""
    full = dtype_range(v.dtype)
    op = v.defining_op
    if op is None or depth <= 0 or v.dtype.is_bool:
        return full
    got = _walk(op, v, depth)
    return got if got is not None and fits(got, v.dtype) else full


def _walk(op, v, depth: int) -> tuple[int, int] | None:
    if isinstance(op, T.FullOp):
        k = int(op.attrs["value"])
        return k, k
    if isinstance(op, T.IotaOp):
        return 0, max(v.shape[op.attrs["axis"]] - 1, 0)
    if isinstance(op, _MOVEMENT):
        return int_range(op.operand(0), depth - 1)
    if isinstance(op, T.CastOp):
        x = op.operand(0)
        return int_range(x, depth - 1) if (x.dtype.is_int or x.dtype.is_bool) else None
    if isinstance(op, T.BitwiseAndOp):
        highs = [r[1] for r in (int_range(u, depth - 1) for u in op.operands) if r[0] >= 0]
        return (0, min(highs)) if highs else None
    if isinstance(op, (T.AddOp, T.SubOp, T.MulOp)):
        return exact_range(op, depth)
    if isinstance(op, (T.MaximumOp, T.MinimumOp)):
        a, b = (int_range(u, depth - 1) for u in op.operands)
        pick = max if isinstance(op, T.MaximumOp) else min
        return pick(a[0], b[0]), pick(a[1], b[1])
    if isinstance(op, T.WhereOp):
        a, b = (int_range(u, depth - 1) for u in op.operands[1:])
        return min(a[0], b[0]), max(a[1], b[1])
    return None
