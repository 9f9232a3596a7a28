"""Exact integer sums across ranks: all_reduce / reduce_scatter of integers wrap like NumPy.

A collective adds the ranks' values exactly but rounds the total once into the dtype,
saturating (nki_sim/collectives.py), where NumPy and the tensor interpreter wrap: the int32
partial sums of a row-parallel matmul near 2**31 came out 2**31 - 1. An int32 / uint32 operand
is split into 16-bit limbs (as WideIntSum does, wide_int_sum.py): ``high = (x & -65536) /
65536`` (signed for int32) and ``low = x & 65535``, each limb summed across the ranks in int32
(at most ``world`` * 65535 in magnitude: no saturation for ``world`` < 2**15), then the low
total's carry moves into the high one and the two join mod 2**32. Twice the bytes cross the
ranks. A narrower integer is summed in int32 (exact) and cast back (wrapping). An operand whose
range (int_range.py) times ``world`` stays in the dtype keeps the one collective; max and min
never leave the range.
"""

from __future__ import annotations

from ...ir.dtypes import float32, int32
from ...parallel.collective_ops import AllReduceOp, ReduceScatterOp
from ..int_range import fits, int_range
from ..match import make, replace
from .base import DecompositionPattern, Emitter
from .wide_int_extreme import LOW_BITS
from .wide_int_sum import _carry, _join

MAX_WORLD = 1 << 15
"""Ranks whose 16-bit limbs (at most 65535 in magnitude) sum within int32."""


class WideIntCollectiveSum(DecompositionPattern):
    """all_reduce / reduce_scatter sum of integers that may leave their dtype → the same
    collective of the 16-bit limbs (int32), carried and joined mod 2**32; a narrow integer
    summed in int32 and cast back"""

    root = (AllReduceOp, ReduceScatterOp)

    def match_and_rewrite(self, op, rw):
        x = op.operand(0)
        dt = op.result.dtype
        world = op.attrs["world"]
        if op.attrs["op"] != "sum" or not dt.is_int or world <= 1:
            return False
        lo, hi = int_range(x)
        if fits((lo * world, hi * world), dt):
            return False
        e = Emitter(rw)
        attrs = dict(op.attrs)
        collective = lambda v: make(rw, type(op), [v], attrs)  # noqa: E731
        if dt.bits < 32:
            return replace(rw, op, e.cast(collective(e.cast(x, int32)), dt))
        if world >= MAX_WORLD:
            return False
        low_mask = (1 << LOW_BITS) - 1
        high_mask = -(1 << LOW_BITS) if dt.is_signed else (1 << 32) - 1 - low_mask
        high = e.cast(e.mul(e.cast(e.bitwise_and(x, high_mask), float32), 1.0 / (1 << LOW_BITS)), int32)
        low = e.cast(e.bitwise_and(x, low_mask), int32)
        high, low = _carry(e, collective(high), collective(low))
        return replace(rw, op, _join(e, high, low, dt))
