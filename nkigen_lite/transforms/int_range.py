"""Value ranges of integer tensor values: an interval every element is known to lie in.

Used to keep one-instruction integer arithmetic and casts where no element can leave the result
dtype's range (no wrap-around to compute). The walk follows constants (splat or dense), iotas, casts, bitwise
ands with a non-negative value (or a negative constant: at most its bits below the sign), +, -,
*, negation, maximum / minimum, where and data movement (reshape, broadcast, slice, transpose);
anything else has its dtype's full range. Each query memoizes its walk (a value reached twice is
walked once), so the ``DEPTH`` ops back stay cheap.

A cast from a float follows the float's interval (``float_range``): constants, casts (rounding
is monotone, so the endpoints rounded to the dtype bound the rounded values), +, -, *, neg,
abs, floor / ceil, maximum / minimum (``np.clip``), where, matmuls, sum / max / min reductions
and data movement; anything else is unbounded. Arithmetic bounds are computed in float64 and
rounded outward, a matmul's by K times its operands' extreme products and a sum's by n times
its operand's ends (each joined with 0), widened for the rounding of the K - 1 (n - 1) fp32
adds. The cast truncates toward zero and saturates, and NaN becomes 0, so its interval is the
truncated, clipped ends joined with 0.
"""

from __future__ import annotations

import math

import numpy as np

from ..tensor import ops as T
from .layout.ops import LayoutConvertOp

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


DEPTH = 16
"""Ops walked back from the value asked about (a byte digit of WideIntMatmul's is 14 back from
the int32 cast of its matmul sums)."""


def arith_range(op, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The exact interval of the integer add / sub / mul ``op`` on operands in ``a`` and ``b``."""
    if isinstance(op, T.AddOp):
        return a[0] + b[0], a[1] + b[1]
    if isinstance(op, T.SubOp):
        return a[0] - b[1], a[1] - b[0]
    corners = [x * y for x in a for y in b]
    return min(corners), max(corners)


def exact_range(op, depth: int = DEPTH) -> tuple[int, int] | None:
    """The interval of the exact (unwrapped) result of the integer add / sub / mul ``op`` from
    its operands' ranges, or None when the walk cannot bound an operand."""
    return _exact(op, depth, {})


def _exact(op, depth: int, memo: dict) -> tuple[int, int]:
    a, b = (_int(u, depth - 1, memo) for u in op.operands)
    return arith_range(op, a, b)


def int_range(v, depth: int = DEPTH) -> tuple[int, int]:
    """An interval holding every element of the integer or bool value ``v`` (``depth`` bounds
    the walk)."""
    return _int(v, depth, {})


def float_range(v, depth: int = DEPTH) -> tuple[float, float]:
    """An interval holding every non-NaN element of the float value ``v`` (infinite ends when
    unknown; ``depth`` bounds the walk)."""
    return _float(v, depth, {})


def _int(v, depth: int, memo: dict) -> tuple[int, int]:
    key = ("i", v, depth)
    if key not in memo:
        full = dtype_range(v.dtype)
        op = v.defining_op
        got = None if op is None or depth <= 0 or v.dtype.is_bool else _int_walk(op, v, depth, memo)
        memo[key] = got if got is not None and fits(got, v.dtype) else full
    return memo[key]


def _and_range(op, depth: int, memo: dict) -> tuple[int, int] | None:
    """x & y: within [0, the smaller high] when an operand is non-negative; x & -2**s (x
    rounded down to a multiple of 2**s) within x's ends rounded down; with another negative
    constant mask c of a signed result, at most c's bits below the sign bit."""
    ranges = [_int(u, depth - 1, memo) for u in op.operands]
    highs = [r[1] for r in ranges if r[0] >= 0]
    if highs:
        return 0, min(highs)
    for c, other in ((ranges[0], ranges[1]), (ranges[1], ranges[0])):
        m = c[0]
        if c[0] == c[1] and m < 0 and (-m & (-m - 1)) == 0 and op.result.dtype.is_signed:
            return other[0] & m, other[1] & m  # -m a power of two: the and rounds down
    consts = [r[0] for r in ranges if r[0] == r[1]]
    if consts and op.result.dtype.is_signed:
        lo, _ = dtype_range(op.result.dtype)
        return lo, consts[0] & (-lo - 1)
    return None


def _int_walk(op, v, depth: int, memo: dict) -> tuple[int, int] | None:
    if isinstance(op, T.FullOp):
        k = int(op.attrs["value"])
        return k, k
    if isinstance(op, T.IotaOp):
        return 0, max(v.shape[op.attrs["axis"]] - 1, 0)
    if isinstance(op, T.ConstantOp) and v.dtype.is_int and op.attrs["value"].array.size:
        a = op.attrs["value"].array
        return int(a.min()), int(a.max())
    if isinstance(op, _MOVEMENT):
        return _int(op.operand(0), depth - 1, memo)
    if isinstance(op, T.CastOp):
        x = op.operand(0)
        if x.dtype.is_int or x.dtype.is_bool:
            return _int(x, depth - 1, memo)
        return _truncated(_float(x, depth - 1, memo), v.dtype) if x.dtype.is_float else None
    if isinstance(op, T.BitwiseAndOp):
        return _and_range(op, depth, memo)
    if isinstance(op, (T.AddOp, T.SubOp, T.MulOp)):
        return _exact(op, depth, memo)
    if isinstance(op, T.NegOp):
        lo, hi = _int(op.operand(0), depth - 1, memo)
        return -hi, -lo
    if isinstance(op, (T.MaximumOp, T.MinimumOp)):
        a, b = (_int(u, depth - 1, memo) for u in op.operands)
        pick = max if isinstance(op, T.MaximumOp) else min
        return pick(a[0], b[0]), pick(a[1], b[1])
    if isinstance(op, T.WhereOp):
        a, b = (_int(u, depth - 1, memo) for u in op.operands[1:])
        return min(a[0], b[0]), max(a[1], b[1])
    return None


_UNBOUNDED = (-math.inf, math.inf)
_F32_EPS = 2.0**-24  # fp32's unit roundoff (half an ulp at 1)


def _truncated(interval: tuple[float, float], dtype) -> tuple[int, int]:
    """The interval of a float -> integer cast (truncate toward zero, saturate, NaN -> 0)."""
    lo, hi = dtype_range(dtype)
    clip = lambda x: lo if x <= lo else hi if x >= hi else math.trunc(x)  # noqa: E731
    return min(0, clip(interval[0])), max(0, clip(interval[1]))


def _rounded(lo: float, hi: float, dtype) -> tuple[float, float]:
    """[lo, hi] (float64 bounds, possibly rounded) widened by one float64 step each way and
    rounded to ``dtype``: holds every value of the exact interval rounded to nearest in it (in
    a dtype other than f32 also rounded through fp32 first: widened by one more ulp)."""
    if math.isnan(lo) or math.isnan(hi):
        return _UNBOUNDED
    lo, hi = np.nextafter(lo, -math.inf), np.nextafter(hi, math.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        lo, hi = float(np.float64(lo).astype(dtype.np_dtype)), float(np.float64(hi).astype(dtype.np_dtype))
    if dtype.name != "f32":  # computed in fp32, then rounded again: one more ulp each way
        step = 2.0**-dtype.mantissa_bits
        with np.errstate(over="ignore", invalid="ignore"):
            lo = float(np.float64(lo - abs(lo) * step).astype(dtype.np_dtype))
            hi = float(np.float64(hi + abs(hi) * step).astype(dtype.np_dtype))
    # a dtype without infinities (fp8 e4m3fn) gives NaN past its range: unbounded there
    return (-math.inf if math.isnan(lo) else lo), (math.inf if math.isnan(hi) else hi)


def _corners(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    with np.errstate(invalid="ignore"):
        corners = [np.float64(x) * np.float64(y) for x in a for y in b]
    if any(math.isnan(c) for c in corners):  # 0 * inf: an unbounded operand
        return _UNBOUNDED
    return float(min(corners)), float(max(corners))


def _float(v, depth: int, memo: dict) -> tuple[float, float]:
    key = ("f", v, depth)
    if key not in memo:
        op = v.defining_op
        got = None if op is None or depth <= 0 else _float_walk(op, depth, memo)
        memo[key] = _UNBOUNDED if got is None else _rounded(*got, v.dtype)
    return memo[key]


def _reduce_range(op, depth: int, memo: dict) -> tuple[float, float]:
    """A sum's n times its operand's ends (joined with 0, widened for the n - 1 fp32 adds'
    rounding); a max / min's the operand's ends."""
    lo, hi = _float(op.operand(0), depth - 1, memo)
    if op.attrs["kind"] != "sum":
        return lo, hi
    n = math.prod(op.operand(0).shape[a] for a in op.attrs["axes"])
    grow = 1 + n * _F32_EPS * 2  # each of the n - 1 fp32 adds rounds by at most 2**-24
    return n * min(lo, 0.0) * grow, n * max(hi, 0.0) * grow


def _float_walk(op, depth: int, memo: dict) -> tuple[float, float] | None:
    if isinstance(op, T.FullOp):
        k = float(op.attrs["value"])
        return (k, k) if not math.isnan(k) else None
    if isinstance(op, (*_MOVEMENT, LayoutConvertOp)):
        return _float(op.operand(0), depth - 1, memo)
    if isinstance(op, T.CastOp):
        x = op.operand(0)
        if x.dtype.is_int or x.dtype.is_bool:
            return _int(x, depth - 1, memo)
        return _float(x, depth - 1, memo) if x.dtype.is_float else None
    if isinstance(op, (T.AddOp, T.SubOp, T.MulOp, T.MaximumOp, T.MinimumOp)):
        a, b = (_float(u, depth - 1, memo) for u in op.operands)
        if isinstance(op, T.AddOp):
            return a[0] + b[0], a[1] + b[1]
        if isinstance(op, T.SubOp):
            return a[0] - b[1], a[1] - b[0]
        if isinstance(op, T.MulOp):
            return _corners(a, b)
        pick = max if isinstance(op, T.MaximumOp) else min
        return pick(a[0], b[0]), pick(a[1], b[1])
    if isinstance(op, (T.NegOp, T.AbsOp, T.FloorOp, T.CeilOp)):
        lo, hi = _float(op.operand(0), depth - 1, memo)
        if isinstance(op, T.NegOp):
            return -hi, -lo
        if isinstance(op, T.AbsOp):
            return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))
        f = np.floor if isinstance(op, T.FloorOp) else np.ceil
        return float(f(lo)), float(f(hi))
    if isinstance(op, T.WhereOp):
        a, b = (_float(u, depth - 1, memo) for u in op.operands[1:])
        return min(a[0], b[0]), max(a[1], b[1])
    if isinstance(op, T.ReduceOp) and op.attrs["kind"] in ("sum", "max", "min"):
        return _reduce_range(op, depth, memo)
    if isinstance(op, T.MatmulOp):
        a, b = op.operands
        k = a.shape[-1]
        lo, hi = _corners(_float(a, depth - 1, memo), _float(b, depth - 1, memo))
        grow = 1 + k * _F32_EPS * 2  # each of the k - 1 fp32 adds rounds by at most 2**-24
        return k * min(lo, 0.0) * grow, k * max(hi, 0.0) * grow
    return None
