"""Range reduction for activation functions with a restricted input domain, and cos via sin.

ScalarE's sin is accurate only on [-pi, pi] and arctan on [-pi/2, pi/2] (no range reduction;
the domains come from the target). An operand already clamped into the domain by
``minimum(maximum(t, lo), hi)`` (what these rewrites produce), or a constant inside the
domain, is left alone, so the pass is idempotent.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.dtypes import int32
from ...tensor import ops as T
from ..match import def_op, replace, splat_value
from .base import DecompositionPattern, Emitter, work_dtype

INV_TWO_PI = 1.0 / (2.0 * math.pi)
# Cody-Waite split 2*pi = CW1 + CW2 + CW3: CW1 has 8 significant bits and CW2 11, so k*CW1 and
# k*CW2 are exact in f32 for |k| < 2**13 (|x| < ~51,000); CW3 is the float64 remainder
# (rounded to the compute dtype when stored).
CW1 = 201 * 2.0**-5
CW2 = 4058 * 2.0**-21
CW3 = 2.0 * math.pi - CW1 - CW2


def clamped_within(v, lo: float, hi: float) -> bool:
    """True when every element of ``v`` provably lies in [lo, hi]: v is a constant inside, or
    ``minimum(maximum(t, a), b)`` or ``maximum(minimum(t, b), a)`` with constants lo <= a and
    b <= hi."""
    const = def_op(v, (T.FullOp, T.ConstantOp))
    if const is not None:
        vals = np.asarray(
            const.attrs["value"].array if isinstance(const, T.ConstantOp) else const.attrs["value"],
            np.float64,
        )
        return bool(np.all((vals >= lo) & (vals <= hi)))
    outer = def_op(v, (T.MinimumOp, T.MaximumOp))
    if outer is None:
        return False
    inner_cls = T.MaximumOp if isinstance(outer, T.MinimumOp) else T.MinimumOp
    for t, c in (outer.operands, outer.operands[::-1]):
        inner = def_op(t, inner_cls)
        bound = splat_value(c)
        if inner is None or bound is None:
            continue
        for _, c2 in (inner.operands, inner.operands[::-1]):
            bound2 = splat_value(c2)
            if bound2 is None:
                continue
            a, b = (bound2, bound) if isinstance(outer, T.MinimumOp) else (bound, bound2)
            if lo <= a and b <= hi:
                return True
    return False


def reduced_sin(e: Emitter, x, out_dtype, shift: float, lo: float, hi: float):
    """sin(x + shift) with x + shift reduced into [lo, hi] ⊇ [-pi, pi] (in f32 at least)."""
    w = work_dtype(out_dtype)
    xw = e.cast(x, w)
    t = e.add(e.mul(xw, INV_TWO_PI), shift / (2.0 * math.pi))
    k = e.cast(e.cast(e.add(t, e.where(e.less(t, 0.0), -0.5, 0.5, w)), int32), w)
    r = e.sub(e.sub(e.sub(xw, e.mul(k, CW1)), e.mul(k, CW2)), e.mul(k, CW3))
    if shift:
        r = e.add(r, shift)
    # k is off by one when t lies within its rounding error of a half-integer: wrap once
    r = e.where(e.greater(r, math.pi), e.sub(e.sub(e.sub(r, CW1), CW2), CW3), r)
    r = e.where(e.less(r, -math.pi), e.add(e.add(e.add(r, CW1), CW2), CW3), r)
    r = e.minimum(e.maximum(r, max(lo, -math.pi)), min(hi, math.pi))
    return e.cast(e.sin(r), out_dtype)


class SinRangeReduction(DecompositionPattern):
    """sin(x) → sin(clamp(x - 2*pi*round(x / 2*pi), -pi, pi))   (unless x is provably in range)"""

    root = T.SinOp

    def match_and_rewrite(self, op, rw):
        dom = self.caps.domain("sin")
        x = op.operand(0)
        if dom is None or clamped_within(x, *dom):
            return False
        return replace(rw, op, reduced_sin(Emitter(rw), x, op.result.dtype, 0.0, *dom))


class CosViaSin(DecompositionPattern):
    """cos(x) → sin(x + pi/2), range-reduced as above"""

    root = T.CosOp

    def match_and_rewrite(self, op, rw):
        if self.caps.has_unary("cos"):
            return False
        dom = self.caps.domain("sin") or (-math.pi, math.pi)
        return replace(rw, op, reduced_sin(Emitter(rw), op.operand(0), op.result.dtype, math.pi / 2, *dom))


class ArctanRangeReduction(DecompositionPattern):
    """arctan(x) → where(|x| > 1, sign(x)*pi/2 - arctan(t), arctan(t)) with
    t = clamp(where(|x| > 1, reciprocal(x), x), -1, 1)   (unless x is provably in range)"""

    root = T.ArctanOp

    def match_and_rewrite(self, op, rw):
        dom = self.caps.domain("arctan")
        x = op.operand(0)
        if dom is None or clamped_within(x, *dom):
            return False
        e = Emitter(rw)
        w = work_dtype(op.result.dtype)
        xw = e.cast(x, w)
        big = e.greater(e.abs(xw), 1.0)
        t = e.minimum(e.maximum(e.where(big, e.reciprocal(xw), xw), -1.0), 1.0)
        y = e.arctan(t)
        out = e.where(big, e.sub(e.mul(e.sign(xw), math.pi / 2), y), y)
        return replace(rw, op, e.cast(out, op.result.dtype))
