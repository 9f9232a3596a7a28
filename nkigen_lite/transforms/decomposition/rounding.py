"""Decompositions of floor and ceil through truncating casts (for targets without them)."""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import int32
from ...tensor import ops as T
from ..match import replace
from .base import DecompositionPattern, Emitter

# |x| below this converts to int32 exactly; every float at or above it is already integral
# and is returned as is. Formats that would turn it into NaN (no infinity, like f8e4m3fn) use
# 2**mantissa_bits instead, from which on all their values are integral.
TRUNC_LIMIT = 2.0**31


def trunc_limit(dtype) -> float:
    """The bound below which ``truncate`` is used for ``dtype``."""
    np_dt = np.float32 if dtype.name == "tf32" else dtype.np_dtype
    with np.errstate(over="ignore"):
        as_dtype = np.array([TRUNC_LIMIT]).astype(np_dt)
    return TRUNC_LIMIT if not np.isnan(as_dtype[0]) else 2.0**dtype.mantissa_bits


def truncate(e: Emitter, x):
    """trunc(x) for |x| < 2**31 (callers select x itself beyond that)."""
    return e.cast(e.cast(x, int32), x.dtype)


class FloorByTrunc(DecompositionPattern):
    """floor(x) → t = trunc(x); where(|x| < 2**31, where(t > x, t - 1, t), x)   (ints: cast)"""

    root = T.FloorOp

    def match_and_rewrite(self, op, rw):
        if self.caps.has_unary("floor"):
            return False
        return replace(rw, op, _round(Emitter(rw), op, "floor"))


class CeilByFloorOrTrunc(DecompositionPattern):
    """ceil(x) → -floor(-x) when the target has floor, else
    t = trunc(x); where(|x| < 2**31, where(t < x, t + 1, t), x)"""

    root = T.CeilOp

    def match_and_rewrite(self, op, rw):
        if self.caps.has_unary("ceil"):
            return False
        e = Emitter(rw)
        x = op.operand(0)
        if self.caps.has_unary("floor") and x.dtype.is_float:
            return replace(rw, op, e.neg(e.floor(e.neg(x))))
        return replace(rw, op, _round(e, op, "ceil"))


def _round(e: Emitter, op, kind: str):
    x = op.operand(0)
    r = op.result
    if not x.dtype.is_float:  # integers and bools are integral already
        return e.cast(x, r.dtype)
    t = truncate(e, x)
    if kind == "floor":
        fixed = e.where(e.greater(t, x), e.sub(t, 1.0), t)
    else:
        fixed = e.where(e.less(t, x), e.add(t, 1.0), t)
    small = e.less(e.abs(x), trunc_limit(x.dtype))
    return e.where(small, fixed, x)
