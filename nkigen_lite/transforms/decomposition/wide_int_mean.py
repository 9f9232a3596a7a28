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

A mean of more than MAX_COUNT elements keeps the exact sum in three int32 words,
``w2 * 2**32 + w1 * 2**16 + w0`` with ``w1``, ``w0`` in [0, 65535] (``long_words``): the
first axis is reshaped into pieces of CHUNK whose limb sums (fp32-exact) are normalized into
words at once (the bits above 16 of ``w0`` carried into ``w1``, of ``w1`` into ``w2``), then
each word is summed in int32 over at most ``PIECE`` pieces at a time and normalized again;
later axes are summed the same way. The sum is formed in fp32 as
``(f32(w2) * 65536 + f32(w1)) * 65536 + f32(w0)``: exact but for the last add while
``|w2 * 65536 + w1| <= 2**24``, else within one ulp (``w0 < 2**16`` is below half an ulp
there); ``|w2| <= 2**24`` (up to 2**25 full-range int32 elements) keeps ``f32(w2)`` exact
(beyond, one more rounding). Times the fp32 ``1 / n``, the mean is within 2 ulp of NumPy's
(measured; at worst four roundings).

Integer means whose fp32 sum is exact (``sum_is_fp32_exact``) stay with MeanToSum.
"""

from __future__ import annotations

import math

from ...ir.dtypes import float32, int32
from ...tensor import ops as T
from ..match import replace
from .base import DecompositionPattern, Emitter
from .wide_int_extreme import LOW_BITS, is_wide_int
from .wide_int_sum import CHUNK, chunk_limb_sums, limb_sums, low_carry, sum_is_fp32_exact

MAX_COUNT = 2**15
"""The most elements the two-limb totals sum exactly: 65535 * 2**15 < 2**31 keeps them in int32."""

PIECE = 2**15 - 1
"""Elements of a later axis one int32 word sum covers: 65535 + PIECE * 65535 < 2**31."""

UNIT = 1 << LOW_BITS


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


def _normalize(e: Emitter, w2, w1, w0):
    """(w2, w1, w0) with w0's bits above 16 carried into w1 and w1's into w2 (the value
    w2 * 2**32 + w1 * 2**16 + w0 unchanged; w2 None is 0)."""
    w1 = e.add(w1, low_carry(e, w0))
    c = low_carry(e, w1)
    return (c if w2 is None else e.add(w2, c)), e.bitwise_and(w1, UNIT - 1), e.bitwise_and(w0, UNIT - 1)


def _piece(e: Emitter, x, axis: int, start: int, stop: int):
    return x if stop - start == x.shape[axis] else e.slice_axis(x, axis, start, stop)


def _chunk_words(e: Emitter, x, axis: int):
    """Normalized words of the sums of each CHUNK-long piece of ``x`` along ``axis``: the axis
    reshaped to (pieces, CHUNK), the limbs summed along the CHUNK axis at once (fp32-exact),
    the words stacked along ``axis``; a shorter last piece is summed separately. Returns
    ((w2, w1, w0) of the whole pieces or None, (w2, w1, w0) of the last piece or None)."""
    n = x.shape[axis]
    q = n // CHUNK
    whole = tail = None
    if q:
        main = _piece(e, x, axis, 0, q * CHUNK)
        split = list(x.shape)
        split[axis : axis + 1] = [q, CHUNK]
        h, l = limb_sums(e, e.reshape(main, split), axis + 1)
        shape = list(x.shape)
        shape[axis] = q
        whole = _normalize(e, None, e.reshape(h, shape), e.reshape(l, shape))
    if n > q * CHUNK:
        h, l = limb_sums(e, _piece(e, x, axis, q * CHUNK, n), axis)
        tail = _normalize(e, None, h, l)
    return whole, tail


def _sum_words(e: Emitter, words, axis: int):
    """Normalized words summed along ``axis`` (kept): int32 sums of at most PIECE elements,
    normalized after each."""
    m = words[0].shape[axis]
    acc = None
    for start in range(0, m, PIECE):
        stop = min(m, start + PIECE)
        part = [e.reduce(_piece(e, w, axis, start, stop), (axis,), "sum") for w in words]
        acc = part if acc is None else [e.add(a, p) for a, p in zip(acc, part)]
        acc = list(_normalize(e, *acc))
    return acc


def long_words(e: Emitter, x, axes):
    """The exact sum of the int32 / uint32 value ``x`` over ``axes`` (kept), any length, as
    normalized int32 words (w2, w1, w0) (module docstring)."""
    first, *rest = axes
    whole, tail = _chunk_words(e, x, first)
    words = _sum_words(e, whole, first) if whole is not None else None
    if tail is not None:
        words = tail if words is None else _normalize(e, *(e.add(a, b) for a, b in zip(words, tail)))
    for axis in rest:
        words = _sum_words(e, words, axis)
    return words


class WideIntMean(DecompositionPattern):
    """mean(x: integer, axes) whose fp32 sum may be inexact → the exact limb totals (high, low),
    carried, ``(f32(high) * 65536 + f32(low)) * (1 / n)``; beyond MAX_COUNT elements three
    normalized words, ``((f32(w2) * 65536 + f32(w1)) * 65536 + f32(w0)) * (1 / n)``"""

    root = T.ReduceOp
    benefit = 2  # before MeanToSum

    def match_and_rewrite(self, op, rw):
        x = op.operand(0)
        if op.attrs["kind"] != "mean" or not op.attrs["keepdims"] or not x.dtype.is_int:
            return False
        axes = op.attrs["axes"]
        n = math.prod(x.shape[a] for a in axes)
        if n == 0 or not axes or sum_is_fp32_exact(x, n):  # no axes: x itself (MeanToSum)
            return False
        e = Emitter(rw)
        acc = e.cast(x, x.dtype if is_wide_int(x.dtype) else int32)
        unit = float(UNIT)
        if n > MAX_COUNT:
            w2, w1, w0 = long_words(e, acc, axes)
            top = e.add(e.mul(e.cast(w2, float32), unit), e.cast(w1, float32))
            total = e.add(e.mul(top, unit), e.cast(w0, float32))
            return replace(rw, op, e.cast(e.mul(total, 1.0 / n), op.result.dtype))
        high, low = limb_totals(e, acc, axes)
        high, low = e.add(high, low_carry(e, low)), e.bitwise_and(low, UNIT - 1)
        total = e.add(e.mul(e.cast(high, float32), unit), e.cast(low, float32))
        return replace(rw, op, e.cast(e.mul(total, 1.0 / n), op.result.dtype))
