"""var / std of integers that fp32 cannot hold: the deviations from an integer near the mean,
each rounded once.

NumPy computes an integer var / std in float64; the fp32 two-pass (VarStdTwoPass) first rounds
every value beyond 2**24 to fp32, losing the spread of values that lie close together far from
zero (values 2**30 + 0..9 came out with variance 0). Variance does not change under a shift,
so here ``c`` = the exact-sum mean (WideIntMean, cast to the operand's 32-bit dtype) is
subtracted first, per 16-bit limb: ``d = (f32(x & H) - f32(c & H)) + (f32(x & 65535) -
f32(c & 65535))`` with ``H`` the high-16-bit mask; both differences are exact in fp32 (17
significant bits) and their sum is rounded once, so ``d`` is within half an ulp of ``x - c``
and no wrap-around can occur. ``var(d)`` / ``std(d)`` (fp32, VarStdTwoPass) is the result:
the deviations are centred near 0, so the two-pass rounding is that of floats of the spread's
size (docs/tensor_ops.md §4 states the tolerance).

Integers provably within 2**24 (``transforms/int_range.py``) are exact in fp32 and keep the
float two-pass.
"""

from __future__ import annotations

from ...ir.dtypes import float32, int32
from ...tensor import ops as T
from ..int_range import int_range
from ..match import make, replace
from .base import DecompositionPattern, Emitter
from .wide_int_extreme import FP32_EXACT, LOW_BITS, is_wide_int


def _limbs(e: Emitter, x):
    """f32 (x & high mask, x & 65535) of the int32 / uint32 value ``x``: both exact."""
    low = (1 << LOW_BITS) - 1
    high = -(1 << LOW_BITS) if x.dtype.is_signed else (1 << 32) - 1 - low
    return e.cast(e.bitwise_and(x, high), float32), e.cast(e.bitwise_and(x, low), float32)


class WideIntVar(DecompositionPattern):
    """var / std(x: integer beyond 2**24) → var / std of ``d = x - c`` in fp32, ``c`` the mean
    cast to x's dtype, subtracted per 16-bit limb (each difference exact, one rounding)"""

    root = T.ReduceOp
    benefit = 2  # before VarStdTwoPass

    def match_and_rewrite(self, op, rw):
        x = op.operand(0)
        if op.attrs["kind"] not in ("var", "std") or not op.attrs["keepdims"] or not x.dtype.is_int:
            return False
        lo, hi = int_range(x)
        if max(-lo, hi) <= FP32_EXACT or x.type.size == 0:
            return False
        e = Emitter(rw)
        axes = op.attrs["axes"]
        wide = e.cast(x, x.dtype if is_wide_int(x.dtype) else int32)
        mean = make(rw, T.ReduceOp, [wide], {"axes": axes, "kind": "mean", "keepdims": True})
        c = e.cast(mean, wide.dtype)
        (xh, xl), (ch, cl) = _limbs(e, wide), _limbs(e, c)
        d = e.add(e.sub(xh, ch), e.sub(xl, cl))
        attrs = dict(op.attrs)
        return replace(rw, op, e.cast(make(rw, T.ReduceOp, [d], attrs), op.result.dtype))
