"""Exact sums of 32-bit integers by digit planes sized to the count (WideIntSum's axis sums).

The engines add in fp32, exact while every partial sum stays within 2**24. A sum of ``n``
values is split into bit planes ``x & (mask << s)`` (a bitwise and: raw bits, exact), each
wide enough that ``n`` of its digits sum within 2**24: ``w = floor(log2(2**24 / n + 1))`` bits
(12 for n = 4096, 8 for n = 65,536), up to the top plane, which keeps the sign (``x & -2**s``
for int32). Only as many planes as the value range (``int_range``) needs are made: an int16
widened to int32 summed over 1,000 elements takes two. Each plane is a multiple of ``2**s``
with at most ``w`` significant bits, so its fp32 copy is exact; scaled by ``2**-s`` it holds
digits whose row sum fp32 computes exactly, on ScalarE as one ``activation(copy, scale=2**-s)``
with a fused ``reduce_res`` (fold.py) while VectorE makes the next plane: per plane one VectorE
and one ScalarE pass, no other full-size work.

The per-row plane sums ``p`` (integers within 2**24) combine into NumPy's wrap-around total
``sum(p << s) mod 2**32`` as 16-bit halves: ``p << s`` contributes ``(p mod 2**(16 - s)) <<
s`` to the low half and ``p >> (16 - s)`` to the high half when ``s < 16``, and
``(p mod 2**(32 - s)) << (s - 16)`` to the high half otherwise; every term is exact in fp32
and int32, and the halves are carried and joined as WideIntSum's limbs are.
"""

from __future__ import annotations

from ...ir.dtypes import DType, float32, int32
from ..int_range import int_range
from .base import Emitter

FP32_EXACT = 2**24
"""fp32 holds every integer of magnitude at most this."""
HALF = 16
"""Bits of the halves the plane sums combine in."""
MIN_PLANE_BITS = 8
"""Narrowest plane: longer axes are summed in pieces of at most 2**24 // 255 elements."""


def plane_bits(n: int) -> int:
    """The widest plane whose ``n`` digits sum within 2**24."""
    w = 1
    while n * ((1 << (w + 1)) - 1) <= FP32_EXACT and w < 31:
        w += 1
    return w


def piece_length(n: int) -> int:
    """Elements summed at once along an axis of ``n``: all of them unless planes would be
    narrower than MIN_PLANE_BITS."""
    return min(n, FP32_EXACT // ((1 << MIN_PLANE_BITS) - 1))


def _top_fits(n: int, lo: int, hi: int, s: int) -> bool:
    return n * max(abs(lo >> s), abs(hi >> s)) <= FP32_EXACT


def plane_shifts(n: int, lo: int, hi: int) -> list[int]:
    """Bit offsets of the planes of a sum of ``n`` values in [lo, hi] (the last plane runs to
    the top bit, signed when lo < 0)."""
    w = plane_bits(n)
    shifts = [0]
    while not _top_fits(n, lo, hi, shifts[-1]):
        shifts.append(shifts[-1] + w)
    return shifts


def _mask(dt: DType, s: int, top: bool, w: int) -> int:
    if top:
        return -(1 << s) if dt.np_dtype.kind == "i" else (1 << dt.bits) - (1 << s)
    return ((1 << w) - 1) << s


def plane_sums(e: Emitter, x, axis: int) -> list:
    """(shift, fp32 row sum of that plane's digits: an exact integer within 2**24) of the
    32-bit integer value ``x`` along ``axis`` (kept; at most piece_length elements there).
    Every plane is made before any is combined, so VectorE makes the next plane while ScalarE
    sums the previous one."""
    n = x.shape[axis]
    lo, hi = int_range(x)
    shifts = plane_shifts(n, lo, hi)
    out = []
    for i, s in enumerate(shifts):
        top = i == len(shifts) - 1
        w = shifts[i + 1] - s if not top else 0
        plane = x if top and s == 0 else e.bitwise_and(x, _mask(x.dtype, s, top, w))
        out.append((s, e.reduce(e.mul(e.cast(plane, float32), 2.0**-s), (axis,), "sum")))
    return out


def _bits(e: Emitter, c, mask: int, scale: float):
    """fp32 ``(c & mask) * scale`` of the int32 value ``c`` (exact: small integers)."""
    f = e.cast(e.bitwise_and(c, mask), float32)
    return e.mul(f, scale) if scale != 1.0 else f


def _halves(e: Emitter, total, s: int):
    """(high, low) fp32 16-bit-half contributions of ``p << s`` mod 2**32, ``total`` the fp32
    plane sum p (an integer within 2**24; low None when nothing)."""
    c = e.cast(total, int32)
    if s >= HALF:
        return _bits(e, c, (1 << (32 - s)) - 1, float(1 << (s - HALF))), None
    k = HALF - s
    return _bits(e, c, -(1 << k), 2.0**-k), _bits(e, c, (1 << k) - 1, float(1 << s))


def add_planes(e: Emitter, high, low, sums):
    """fp32 (high, low) halves (exact integers; None at first) plus the (shift, plane sum)
    contributions ``sums``: the unjoined total high * 65536 + low mod 2**32."""
    for s, p in sums:
        h, l = _halves(e, p, s)
        high = h if high is None else e.add(high, h)
        if l is not None:
            low = l if low is None else e.add(low, l)
    return high, low


def carry(e: Emitter, high, low):
    """fp32 (high, low) with low's bits above 16 carried into high and both kept mod 2**16
    (the pair's value mod 2**32 unchanged): int32 (high, low)."""
    lc = e.cast(low, int32)
    high = e.add(high, _bits(e, lc, -(1 << HALF), 2.0**-HALF))
    return e.bitwise_and(e.cast(high, int32), (1 << HALF) - 1), e.bitwise_and(lc, (1 << HALF) - 1)
