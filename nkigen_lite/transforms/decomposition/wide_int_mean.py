"""Means of integers from their exact sum (NumPy sums integers exactly, in float64, then divides).

A mean of integers computed as an fp32 sum (MeanToSum) rounds every partial sum beyond 2**24
and cancels badly (the mean of 2**30 + 1 and -2**30 came out 0, not 0.5). Here the sum is
exact: each value (widened to int32 / uint32) is split into 16-bit limbs as in WideIntSum
(wide_int_sum.py), whose fp32-exact chunk sums add up in int32 to exact totals ``high`` and
``low`` (no wrap-around: both stay below 2**31 for at most ``MAX_COUNT`` elements); the bits of
``low`` above 16 are carried into ``high``, so the sum is ``high * 65536 + low`` with ``low`` in
[0, 65535]. That sum is formed in fp32 (``high * 65536`` exact while |high| <= 2**24, one
rounding for the add: the correctly rounded sum) and multiplied by the fp32 ``1 / n``: the
result is within 2 ulp of NumPy's mean rounded to fp32 (three roundings of at most half an ulp).

Integer means whose fp32 sum is exact (``sum_is_fp32_exact``) stay with MeanToSum; means of
more than MAX_COUNT elements keep the fp32 sum (docs/tensor_ops.md §4).
"""

from __future__ import annotations

import math

from ...ir.dtypes import float32, int32
from ...tensor import ops as T
from ..match import replace
from .base import DecompositionPattern, Emitter
from .wide_int_extreme import LOW_BITS, is_wide_int
from .wide_int_sum import chunk_limb_sums, low_carry, sum_is_fp32_exact

MAX_COUNT = 2**15
"""The most elements a mean sums exactly: 65535 * 2**15 < 2**31 keeps the limb totals in int32."""


def limb_totals(e: Emitter, x, axes):
    """Exact int32 totals (high, low) of the high and low 16-bit limbs of the int32 / uint32
    value ``x`` over ``axes`` (kept): the first axis by fp32-exact chunks of CHUNK, the others
    as int32 sums (WideIntSum, exact while the totals fit int32)."""
    first, *rest = axes
    high = low = None
    for h, l in chunk_limb_sums(e, x, first):
        high, low = (h, l) if high is None else (e.add(high, h), e.add(low, l))
    for axis in rest:
        high, low = e.reduce(high, (axis,), "sum"), e.reduce(low, (axis,), "sum")
    return high, low


class WideIntMean(DecompositionPattern):
    """mean(x: integer, axes) whose fp32 sum may be inexact → the exact limb totals (high, low),
    carried, ``(f32(high) * 65536 + f32(low)) * (1 / n)``"""

    root = T.ReduceOp
    benefit = 2  # before MeanToSum

    def match_and_rewrite(self, op, rw):
        x = op.operand(0)
        if op.attrs["kind"] != "mean" or not op.attrs["keepdims"] or not x.dtype.is_int:
            return False
        axes = op.attrs["axes"]
        n = math.prod(x.shape[a] for a in axes)
        if n == 0 or n > MAX_COUNT or sum_is_fp32_exact(x, n):
            return False
        e = Emitter(rw)
        acc = e.cast(x, x.dtype if is_wide_int(x.dtype) else int32)
        high, low = limb_totals(e, acc, axes)
        unit = 1 << LOW_BITS
        high, low = e.add(high, low_carry(e, low)), e.bitwise_and(low, unit - 1)
        total = e.add(e.mul(e.cast(high, float32), float(unit)), e.cast(low, float32))
        return replace(rw, op, e.cast(e.mul(total, 1.0 / n), op.result.dtype))
