"""Exact integer matmuls: NumPy's int32 / uint32 result wrapped mod 2**32 (and narrower).

The Tensor engine multiplies and accumulates in fp32, exact only while every partial sum stays
within 2**24 (an int32 operand beyond 2**24 is even rounded on its way in). When the operands'
value ranges (transforms/int_range.py) prove ``K * max|a| * max|b| <= 2**24`` and the result
fits its dtype, the one fp32 matmul stays. Otherwise:

- a narrow integer result (int8 / int16 / uint8 / uint16) is the int32 matmul of the operands
  widened to int32, cast to the result dtype (the cast wraps like NumPy's ``astype``);
- a 32-bit result splits each operand (as raw 32 bits) into four byte limbs ``x & (255 << 8i)``
  scaled by ``2**-8i`` (exact: at most 8 significant bits, so bf16 holds them and the matmul
  runs at the bf16 rate); the top limb of an int32 is signed (-128..127). The limb pairs
  ``(i, j)`` with ``i + j <= 3`` (10 of the 16) are the ones that reach the low 32 bits. Each
  pair is a matmul over K chunks of ``CHUNK`` = 256 (``256 * 255 * 255 < 2**24``: every fp32
  PSUM partial sum exact), cast to int32, and the chunks / pairs of one shift ``s = i + j``
  add up in int32 to ``T_s`` (exact while the ranges prove it fits, wrapping otherwise). The
  result is ``T0 + T1 * 2**8 + T2 * 2**16 + T3 * 2**24`` mod 2**32, by Horner from the top:
  ``r = T3``, then ``r = r * 2**8 + T_s`` for s = 2, 1, each r first reduced to ``32 - 8s``
  signed bits (add, and, subtract) so that every step fits int32; only the last add of ``T0``
  is the wrapping int32 add (lower/wide_int_arith.py).

An operand whose range (int_range.py) needs fewer digits gets fewer (``digit_count``: one for
|x| <= 128, two for int16, three for uint16), so fewer pairs: int16 x int16 is 4 pairs, int32 x
int8 4; with at most 2 (1) pairs per shift the K chunks are 512 (1024).

Degenerate matmuls (K = 1, small batched matrix-vector products) are DegenerateMatmul's
(contraction.py): elementwise products and sums, which wrap already.
"""

from __future__ import annotations

from ...ir.dtypes import bfloat16, float32, int32
from ...tensor import ops as T
from ..int_range import fits, int_range
from ..layout.ops import LayoutConvertOp
from ..match import make, replace
from .base import DecompositionPattern, Emitter
from .wide_int_extreme import FP32_EXACT

LIMB_BITS = 8
"""Bits per limb: bf16 holds every integer in [-128, 128] exactly."""

LIMBS = 32 // LIMB_BITS

CHUNK = 256
"""Contraction elements one fp32 sum covers: 4 limb pairs * 256 * 128 * 128 = 2**24."""

BIAS = 0x808080
"""Added to the low 24 bits before their bytes are taken: each byte minus 128 is then a
balanced digit, and the carry out of them moves into the top digit."""


def sum_range(a, b) -> tuple[int, int]:
    """An interval holding every partial sum of ``a @ b``: K times the operand ranges'
    extreme products (and 0)."""
    k = a.shape[-1]
    corners = [x * y for x in int_range(a) for y in int_range(b)]
    return k * min(0, *corners), k * max(0, *corners)


def _matmul(e: Emitter, a, b):
    return make(e.rw, T.MatmulOp, [a, b])


def _scaled(e: Emitter, x, mask: int, shift: int):
    """f32 ``(x & mask) * 2**-shift`` (exact: the and keeps at most 8 significant bits)."""
    u = e.cast(e.bitwise_and(x, mask), float32)
    return e.mul(u, 1.0 / (1 << shift)) if shift else u


def digit_count(interval: tuple[int, int]) -> int:
    """How many balanced base-256 digits represent every integer of ``interval`` exactly: the
    fewest n < 4 whose top digit ``floor(x / 256**(n-1))`` (plus the carry of the digits below
    when n > 1) stays within [-128, 128], else 4 (then the digits are of x mod 2**32)."""
    lo, hi = interval
    for n in range(1, LIMBS):
        s = LIMB_BITS * (n - 1)
        if lo >> s >= -128 and (hi >> s) + (n > 1) <= 128:
            return n
    return LIMBS


def _digits(e: Emitter, x, transpose: bool, n: int = LIMBS):
    """The ``n`` balanced base-256 digits of the int32 / uint32 value ``x`` (mod 2**32 when n
    is 4; n < 4 only for an int32 x within ``digit_count``'s interval), each an f32 value in
    [-128, 128] read through a bf16 cast (so the matmul runs at the bf16 rate). With
    ``s = 8 (n - 1)``: ``y = (x & (2**s - 1)) + BIAS`` (the low s bits; below 2**25, no wrap),
    ``d_i = byte_i(y) - 128`` for i < n - 1, and the top digit is x's bits from s up (signed)
    plus y's carry (bit s); one digit is x itself. ``transpose`` reads them through a
    layout_convert (a TensorE transpose) instead of letting the matmul's layout reach back into
    their computation (an element-wise transposing load of the operand)."""
    top = LIMB_BITS * (n - 1)
    if n == 1:
        out = [e.cast(x, float32)]
    else:
        y = e.add(e.bitwise_and(x, (1 << top) - 1), BIAS & ((1 << top) - 1))
        out = [e.sub(_scaled(e, y, 255 << (LIMB_BITS * i), LIMB_BITS * i), 128.0) for i in range(n - 1)]
        carry = _scaled(e, y, 1 << top, top)
        if n < LIMBS:  # x & -2**s: x's multiple of 2**s below it, exact in f32 (8 significant bits)
            out.append(e.add(_scaled(e, x, -(1 << top), top), carry))
        else:
            sign_bit = -(1 << 31) if x.dtype.is_signed else 1 << 31  # the and gives -2**31 / 2**31
            sign = _scaled(e, x, sign_bit, top)
            low7 = e.add(_scaled(e, x, 127 << top, top), carry)
            out.append(e.add(low7, sign) if x.dtype.is_signed else e.sub(low7, sign))
    result = []
    for d in out:
        d = e.cast(e.cast(d, bfloat16), float32)
        result.append(make(e.rw, LayoutConvertOp, [d]) if transpose else d)
    return result


def _chunks(k: int, pairs: int):
    """(start, stop) pieces of a contraction of ``k`` elements: CHUNK each when up to four
    digit pairs share a shift, 2 or 4 times that when at most ``pairs`` = 2 or 1 do (each
    fp32 sum still within 2**24)."""
    step = CHUNK * (LIMBS // pairs)
    return [(s, min(k, s + step)) for s in range(0, k, step)]


def _piece(e: Emitter, x, axis: int, start: int, stop: int):
    return x if stop - start == x.shape[axis] else e.slice_axis(x, axis, start, stop)


def _operand_digits(e: Emitter, x, transpose: bool):
    """``x``'s digits, as few as its value range allows (``digit_count``)."""
    n = digit_count(int_range(x))
    if n < LIMBS:
        x = e.cast(x, int32)  # the range fits int32: the cast keeps the value
    return _digits(e, x, transpose, n)


def wide_matmul(e: Emitter, a, b):
    """The exact int32 ``a @ b`` mod 2**32 of int32 / uint32 operands."""
    da, db = _operand_digits(e, a, a.ndim >= 2), _operand_digits(e, b, False)
    ka, kb = a.ndim - 1, (b.ndim - 2 if b.ndim >= 2 else 0)
    sums = []
    for s in range(min(LIMBS, len(da) + len(db) - 1)):
        t = None
        for start, stop in _chunks(a.shape[-1], min(len(da), len(db))):
            p = None  # sum over the pairs i + j = s: every partial sum within 2**24, exact
            for i in range(max(0, s - len(db) + 1), min(s, len(da) - 1) + 1):
                q = _matmul(e, _piece(e, da[i], ka, start, stop), _piece(e, db[s - i], kb, start, stop))
                p = q if p is None else e.add(p, q)
            part = e.cast(p, int32)  # its range follows from the digits' (int_range.py)
            t = part if t is None else e.add(t, part)
        sums.append(t)
    # Horner from the top shift: r = (r * 2**8 + T_s) kept to its low 32 - 8s bits (signed),
    # so every step fits int32; only the last add (of T_0) wraps
    if len(sums) == 1:
        return sums[0]
    r = None
    for s in range(len(sums) - 1, 0, -1):
        r = sums[s] if r is None else e.add(e.mul(r, 1 << LIMB_BITS), sums[s])
        half = 1 << (31 - LIMB_BITS * s)
        r = e.sub(e.bitwise_and(e.add(r, half), 2 * half - 1), half)
    return e.add(e.mul(r, 1 << LIMB_BITS), sums[0])


class WideIntMatmul(DecompositionPattern):
    """A @ B of integers whose fp32 partial sums may pass 2**24 (or whose result may wrap) →
    byte limbs (bf16-exact) matmuls over K chunks of 256, combined with wrapping int32 adds"""

    root = T.MatmulOp

    def match_and_rewrite(self, op, rw):
        a, b = op.operands
        dt = op.result.dtype
        if not dt.is_int or op.result.type.size == 0 or a.shape[-1] == 0:
            return False
        lo, hi = sum_range(a, b)
        if max(-lo, hi) <= FP32_EXACT and fits((lo, hi), dt):
            return False
        e = Emitter(rw)
        if dt.bits != 32:
            wide = _matmul(e, e.cast(a, int32), e.cast(b, int32))
            return replace(rw, op, e.cast(wide, dt))
        wide = lambda v: v if v.dtype.bits == 32 else e.cast(v, int32)  # noqa: E731
        c = wide_matmul(e, wide(a), wide(b))
        return replace(rw, op, e.cast(c, dt))
