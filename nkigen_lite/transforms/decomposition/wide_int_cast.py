"""Exact casts between int32 and uint32 (NumPy's astype: the same 32 bits, wrapped).

The engines copy between dtypes via fp32, rounding values beyond 2**24 and saturating where
NumPy wraps (int32 -1 became uint32 0; uint32 2**31 became int32 2**31 - 1; uint32 2**24 + 1
became 2**24). The cast is rebuilt from bitwise ands (raw bits, exact): bits 16..30
(``x & 0x7fff0000``) and the sign bit (``x & sign``, 0 or -+2**31), both cast to fp32 exactly
and combined as ``middle - sign`` (the sign bit's weight flips between the two dtypes; a
multiple of 65536 of at most 17 significant bits, exact in fp32), cast to the target, and or-ed
with the low 16 bits ``x & 65535`` (one exact copy). A narrower signed source is widened to
int32 first (exact).

Casts whose source is known to lie in [0, 2**24] (an iota, a constant, a cast from a narrower
unsigned integer or bool, an and with such a value) keep the one copy.
"""

from __future__ import annotations

from ...ir.dtypes import float32, int32
from ...tensor import ops as T
from ..match import replace
from .base import DecompositionPattern, Emitter
from .wide_int_extreme import FP32_EXACT, LOW_BITS


def small_nonnegative(v, depth: int = 8) -> bool:
    """Whether every element of the integer value ``v`` is known to lie in [0, 2**24]."""
    if v.dtype.is_bool or (v.dtype.np_dtype.kind == "u" and v.dtype.bits <= 24):
        return True
    op = v.defining_op
    if op is None or depth == 0:
        return False
    if isinstance(op, T.IotaOp):
        return v.shape[op.attrs["axis"]] <= FP32_EXACT
    if isinstance(op, T.FullOp):
        return 0 <= op.attrs["value"] <= FP32_EXACT
    if isinstance(op, T.CastOp) and (op.operand(0).dtype.is_int or op.operand(0).dtype.is_bool):
        return small_nonnegative(op.operand(0), depth - 1)
    if isinstance(op, T.BitwiseAndOp):  # and-ed with a value in [0, 2**24]
        return any(small_nonnegative(m, depth - 1) for m in op.operands)
    return False


class WideIntCast(DecompositionPattern):
    """cast(x: int32 / narrower signed, uint32) and cast(x: uint32, int32) → bits 16..30 minus
    the sign bit in fp32 (exact), cast, or-ed with the low 16 bits: NumPy's wrap-around"""

    root = T.CastOp

    def match_and_rewrite(self, op, rw):
        x, dt = op.operand(0), op.result.dtype
        if not (x.dtype.is_int and dt.is_int and dt.bits == 32 and x.dtype.bits <= 32):
            return False
        signed_to_unsigned = x.dtype.np_dtype.kind == "i" and dt.np_dtype.kind == "u"
        unsigned_to_signed = x.dtype.np_dtype.kind == "u" and x.dtype.bits == 32 and dt.np_dtype.kind == "i"
        if not (signed_to_unsigned or unsigned_to_signed) or small_nonnegative(x):
            return False
        e = Emitter(rw)
        x = e.cast(x, int32) if signed_to_unsigned else x  # a narrower signed source: exact
        sign = -(1 << 31) if signed_to_unsigned else 1 << 31
        middle = e.cast(e.bitwise_and(x, (1 << 31) - (1 << LOW_BITS)), float32)
        top = e.cast(e.sub(middle, e.cast(e.bitwise_and(x, sign), float32)), dt)
        low = e.cast(e.bitwise_and(x, (1 << LOW_BITS) - 1), dt)  # in [0, 65535]: one copy
        return replace(rw, op, e.bitwise_or(top, low))
