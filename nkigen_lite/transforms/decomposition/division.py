"""floor_divide and mod (NumPy semantics) from reciprocal, floor, multiply and exact
correction steps, for targets without an integer or floor division.

Floats (computed in f32): q0 = floor(a * reciprocal(b)) is within one of floor(a / b) while
|a / b| < 2**22. The exact sign of a - q*b decides the correction: the product q*b is split
error-free (Veltkamp/Dekker: q*b = p + err exactly), and (a - p) - err has the sign of the
exact residual. mod is that residual for the corrected q, rounded once, as NumPy's fmod-based
result is. So both are exact for |a / b| < 2**22; beyond that floor_divide is within a
relative 2**-21 of NumPy's value, and mod is exact when no correction was needed and
|a / b| < 2**24, else NaN (never a wrong value). Special values follow NumPy: b == 0 gives
a/b (inf or nan) for floor_divide and nan for mod; infinite a gives nan; infinite b gives 0 or
-1 (floor_divide) and a or b (mod). Zero results are +0.0 (NumPy may give -0.0).

Integers (computed in int32, or uint32 for uint32): two rounds of the f32 estimate bring q
within one of the answer (the first residual is exact in wrapping int32 arithmetic), then one
correction each way; uint32 divisors >= 2**30 divide by three conditional subtractions.
b == 0 gives 0 for both ops, as NumPy does; INT_MIN // -1 wraps to INT_MIN, as in NumPy.
"""

from __future__ import annotations

import math

from ...ir.dtypes import float32, int32, uint32
from ...tensor import ops as T
from ..match import replace
from .base import DecompositionPattern, Emitter

SPLIT = 4097.0  # 2**12 + 1: Veltkamp split of an f32 into two 12-bit halves
EXACT_QUOTIENT = 2.0**22  # below this, floor(a * reciprocal(b)) is within one of floor(a / b)


def _split(e: Emitter, x):
    c = e.mul(x, SPLIT)
    hi = e.sub(c, e.sub(c, x))
    return hi, e.sub(x, hi)


def _residual(e: Emitter, a, b, b_split, q):
    """A value with the exact sign of a - q*b (and its correctly rounded value when a - q*b is
    small next to q*b, as it is near the floor)."""
    bh, bl = b_split
    p = e.mul(q, b)
    qh, ql = _split(e, q)
    err = e.add(e.add(e.add(e.sub(e.mul(qh, bh), p), e.mul(qh, bl)), e.mul(ql, bh)), e.mul(ql, bl))
    return e.sub(e.sub(a, p), err)


def _float_floor_div(e: Emitter, a, b, want_mod: bool):
    sb = e.sign(b)
    rb = e.reciprocal(b)
    q0 = e.floor(e.mul(a, rb))
    bs = _split(e, b)
    s0 = _residual(e, a, b, bs, q0)
    s1 = _residual(e, a, b, bs, e.add(q0, 1.0))
    too_big = e.less(e.mul(e.sign(s0), sb), 0.0)
    too_small = e.greater_equal(e.mul(e.sign(s1), sb), 0.0)
    q = e.where(too_big, e.sub(q0, 1.0), e.where(too_small, e.add(q0, 1.0), q0))
    a_inf = e.equal(e.abs(a), math.inf)
    b_inf = e.equal(e.abs(b), math.inf)
    b_zero = e.equal(b, 0.0)
    opposite = e.less(e.mul(e.sign(a), sb), 0.0)
    if not want_mod:
        q_inf_b = e.where(opposite, -1.0, e.mul(a, 0.0))  # a * 0 keeps a NaN a
        out = e.where(b_inf, q_inf_b, q)
        out = e.where(a_inf, math.nan, out)
        return e.where(b_zero, e.mul(a, rb), out)
    r = _residual(e, a, b, bs, q)
    # q is certain when the estimate is within one (|q0| < 2**22), or when no correction was
    # needed and q0 + 1 is representable (|q0| < 2**24: the exact signs then bracket q0);
    # otherwise NaN, not a possibly wrong value
    aq = e.abs(q0)
    uncorrected = e.logical_and(e.logical_not(e.logical_or(too_big, too_small)), e.less(aq, 2.0**24))
    valid = e.logical_or(e.less(aq, EXACT_QUOTIENT), uncorrected)
    r = e.where(valid, r, math.nan)
    r_inf_b = e.where(opposite, b, a)
    out = e.where(b_inf, r_inf_b, r)
    return e.where(e.logical_or(a_inf, b_zero), math.nan, out)


def _int_floor_div(e: Emitter, a, b, want_mod: bool):
    """a, b in int32 (any value) or uint32; returns q or r in that dtype."""
    w = a.dtype
    b_zero = e.equal(b, 0)
    bs = e.where(b_zero, e.full(1, w, ()), b)
    rb = e.reciprocal(e.cast(bs, float32))

    def estimate(num_f):
        return e.floor(e.mul(num_f, rb))

    if w is int32:
        q0 = e.cast(estimate(e.cast(a, float32)), w)
        r0 = e.sub(a, e.mul(q0, bs))
        q1 = e.add(q0, e.cast(estimate(e.cast(r0, float32)), w))
        r1 = e.sub(a, e.mul(q1, bs))
        b_pos = e.greater(bs, 0)
        neg, pos = e.less(r1, 0), e.greater(r1, 0)
        too_big = e.logical_or(e.logical_and(neg, b_pos), e.logical_and(pos, e.less(bs, 0)))
        q2 = e.where(too_big, e.sub(q1, 1), q1)
        r2 = e.where(too_big, e.add(r1, bs), r1)
        too_small = e.where(b_pos, e.greater_equal(r2, bs), e.less_equal(r2, bs))
    else:  # uint32: residuals of the estimate are read as signed around 2**31
        half = 2**31
        q0 = e.cast(estimate(e.cast(a, float32)), w)
        r0 = e.sub(a, e.mul(q0, bs))
        r0_neg = e.neg(e.cast(e.sub(e.full(0, w, ()), r0), float32))
        d = estimate(e.where(e.greater_equal(r0, half), r0_neg, e.cast(r0, float32)))
        q1 = e.where(e.less(d, 0.0), e.sub(q0, e.cast(e.neg(d), w)), e.add(q0, e.cast(d, w)))
        r1 = e.sub(a, e.mul(q1, bs))
        too_big = e.greater_equal(r1, half)
        q2 = e.where(too_big, e.sub(q1, 1), q1)
        r2 = e.where(too_big, e.add(r1, bs), r1)
        # divisors >= 2**30 (where remainders can reach 2**31) divide by subtraction: q <= 3
        big_b = e.greater_equal(bs, 2**30)
        qs, rs = e.full(0, w, ()), a
        for _ in range(3):
            ge = e.greater_equal(rs, bs)
            qs = e.add(qs, e.cast(ge, w))
            rs = e.where(ge, e.sub(rs, bs), rs)
        q2 = e.where(big_b, qs, q2)
        r2 = e.where(big_b, rs, r2)
        too_small = e.greater_equal(r2, bs)
    zero = e.full(0, w, ())
    if want_mod:
        return e.where(b_zero, zero, e.where(too_small, e.sub(r2, bs), r2))
    return e.where(b_zero, zero, e.where(too_small, e.add(q2, 1), q2))


class FloorDivideMod(DecompositionPattern):
    """floor_divide(a, b) / mod(a, b) → estimate, exact residual sign, ±1 correction"""

    root = (T.FloorDivideOp, T.ModOp)

    def match_and_rewrite(self, op, rw):
        short = "mod" if isinstance(op, T.ModOp) else "floor_divide"
        if self.caps.has_binary(short):
            return False
        e = Emitter(rw)
        r = op.result
        if r.dtype.is_float:
            w = float32
            a, b = (e.cast(e.cast(v, r.dtype), w) for v in op.operands)
            out = _float_floor_div(e, a, b, short == "mod")
        else:
            w = uint32 if r.dtype is uint32 else int32
            a, b = (e.cast(e.cast(v, r.dtype), w) for v in op.operands)
            out = _int_floor_div(e, a, b, short == "mod")
        out = e.broadcast_to(e.cast(out, r.dtype), r.shape)
        return replace(rw, op, out)
