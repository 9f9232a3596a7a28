"""Exact sum reductions of integers whose sum fp32 cannot hold (int32, uint32).

The engines add in fp32 (VectorE's tensor_reduce, the PE's ones-matmul spreads), exact only
while every partial sum stays within 2**24; NumPy sums int32 / uint32 exactly and wraps the
result to the result dtype (mod 2**32). Each value ``v`` is split by bitwise ands (raw bits,
exact) into a high limb ``(v & -65536) / 65536`` (a 16-bit signed, or for uint32 unsigned,
integer) and a low limb ``v & 65535`` in [0, 65535]. Along each reduced axis the limbs are
summed in fp32 over chunks of at most ``CHUNK`` = 256 elements, so every partial sum stays
within 256 * 65535 < 2**24 (exact in any order); the partials come back to int32 exactly and
combine with exact int32 arithmetic (GpSimd, NumPy's wrap-around): ``high * 65536 + low``,
then the chunks' int32 sum. Several reduced axes are reduced one after the other (the sum
mod 2**32 does not depend on the order).

Integers of at most 16 bits whose sum is provably within 2**24 (``bound * count``) and int32
values known to lie within 2**24 whose sum is too keep the one fp32 reduction.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.dtypes import DType, float32, int32
from ...tensor import ops as T
from ..match import replace
from .base import DecompositionPattern, Emitter
from .digit_planes import add_planes, carry, piece_length, plane_sums
from .wide_int_extreme import FP32_EXACT, LOW_BITS, is_wide_int

CHUNK = FP32_EXACT // (1 << LOW_BITS)
"""Elements summed in fp32 at once: 256 limbs of at most 65535 stay within 2**24."""


def magnitude_bound(v, depth: int = 8) -> int:
    """An upper bound on |element| of the integer or bool value ``v``: its dtype's range, or
    less when built from an iota, a constant, a cast from a narrower integer or bool, or a
    where of such values (``depth`` bounds the walk)."""
    if v.dtype.is_bool:
        return 1
    info = np.iinfo(v.dtype.np_dtype)
    widest = max(-int(info.min), int(info.max))
    op = v.defining_op
    if op is None or depth == 0:
        return widest
    if isinstance(op, T.IotaOp):
        return min(widest, max(v.shape[op.attrs["axis"]] - 1, 0))
    if isinstance(op, T.FullOp):
        return min(widest, abs(int(op.attrs["value"])))
    if isinstance(op, T.CastOp) and (op.operand(0).dtype.is_int or op.operand(0).dtype.is_bool):
        return min(widest, magnitude_bound(op.operand(0), depth - 1))
    if isinstance(op, T.WhereOp):
        return min(widest, max(magnitude_bound(x, depth - 1) for x in op.operands[1:]))
    return widest


def sum_is_fp32_exact(x, count: int) -> bool:
    """Whether one fp32 sum of ``count`` elements of the integer value ``x`` is exact: every
    partial sum within 2**24."""
    return magnitude_bound(x) * count <= FP32_EXACT


def limb_sums(e: Emitter, x, axis: int):
    """fp32-exact sums along ``axis`` (kept) of the high and low limbs of the int32 / uint32
    value ``x`` (at most CHUNK elements there), back in int32."""
    low_mask = (1 << LOW_BITS) - 1
    high_mask = -(1 << LOW_BITS) if x.dtype.np_dtype.kind == "i" else (1 << x.dtype.bits) - 1 - low_mask
    high = e.mul(e.cast(e.bitwise_and(x, high_mask), float32), 1.0 / (1 << LOW_BITS))
    low = e.cast(e.bitwise_and(x, low_mask), float32)
    return e.cast(e.reduce(high, (axis,), "sum"), int32), e.cast(e.reduce(low, (axis,), "sum"), int32)


def chunk_limb_sums(e: Emitter, x, axis: int):
    """The (high, low) limb sums (limb_sums) of each CHUNK-long piece of ``x`` along ``axis``."""
    n = x.shape[axis]
    for start in range(0, n, CHUNK):
        part = e.slice_axis(x, axis, start, min(n, start + CHUNK)) if n > CHUNK else x
        yield limb_sums(e, part, axis)


def low_carry(e: Emitter, low):
    """The int32 ``low >> 16`` (arithmetic) of an int32 limb total, through fp32 (exact)."""
    return e.cast(e.mul(e.cast(e.bitwise_and(low, -(1 << LOW_BITS)), float32), 1.0 / (1 << LOW_BITS)), int32)


def _carry(e: Emitter, high, low):
    """(high, low) with low's bits above 16 carried into high and both kept mod 2**16 (the
    pair's value high * 65536 + low mod 2**32 unchanged): no int32 add can overflow (GpSimd
    saturates where NumPy wraps)."""
    low_mask = (1 << LOW_BITS) - 1
    carry = low_carry(e, low)
    return e.bitwise_and(e.add(high, carry), low_mask), e.bitwise_and(low, low_mask)


def _join(e: Emitter, high, low, dt: DType):
    """The ``dt`` value high * 65536 + low mod 2**32 of 16-bit parts: the high part (signed
    for int32) times 65536 in fp32 (exact), cast, or-ed with the low part."""
    half = 1 << (LOW_BITS - 1)
    if dt.np_dtype.kind == "i":
        high = e.sub(e.bitwise_and(e.add(high, half), (1 << LOW_BITS) - 1), half)
    top = e.cast(e.mul(e.cast(high, float32), float(1 << LOW_BITS)), dt)
    return e.bitwise_or(top, e.cast(low, dt))


def wide_sum_axis(e: Emitter, x, axis: int, dt: DType):
    """The exact (mod 2**32) ``dt`` sum of the int32 / uint32 value ``x`` along ``axis`` (kept):
    digit planes (digit_planes.py) per piece of at most piece_length elements."""
    n = x.shape[axis]
    step = piece_length(n)
    high = low = None
    for start in range(0, n, step):
        part = e.slice_axis(x, axis, start, min(n, start + step)) if step < n else x
        high, low = add_planes(e, high, low, plane_sums(e, part, axis))
        if low is None:
            low = e.full(0.0, float32, high.shape)
        high, low = carry(e, high, low)
        if start + step < n:
            high, low = e.cast(high, float32), e.cast(low, float32)
    return _join(e, high, low, dt)


class WideIntSum(DecompositionPattern):
    """sum(x, axes) of int32 / uint32 (or a narrow integer whose sum may pass 2**24) → per
    axis, fp32 sums of the high / low 16-bit limbs over chunks of 256, carried in int32"""

    root = T.ReduceOp

    def match_and_rewrite(self, op, rw):
        x = op.operand(0)
        if op.attrs["kind"] != "sum" or not op.attrs["keepdims"] or not x.dtype.is_int:
            return False
        axes = op.attrs["axes"]
        if sum_is_fp32_exact(x, math.prod(x.shape[a] for a in axes)):
            return False
        e = Emitter(rw)
        dt = op.result.dtype
        wide = dt if is_wide_int(dt) else int32
        acc = e.cast(x, wide)
        for axis in axes:
            if acc.shape[axis] == 0:
                shape = list(acc.shape)
                shape[axis] = 1
                acc = e.full(0, wide, shape)
            else:
                acc = wide_sum_axis(e, acc, axis, wide)
        return replace(rw, op, e.cast(acc, dt))
