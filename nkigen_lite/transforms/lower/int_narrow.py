"""Integer casts to 8- or 16-bit integers that wrap like NumPy's astype (keep the low bits).

An engine copy between integer dtypes goes via fp32 and saturates (int32 70000 became int16
32767; NumPy gives 4464). The cast keeps the low ``bits`` of the source by a bit-vector and
(raw bits, exact): an unsigned target takes ``x & mask`` directly; a signed one takes
``((x & mask) ^ half) - half`` (the xor flips the sign bit, the subtraction, exact in fp32,
sign-extends it). A source narrower than 32 bits is first copied exactly into int32 (its value,
sign-extended). 2-3 instructions instead of 1; casts whose source range fits the target
(transforms/int_range.py) keep the one copy.
"""

from __future__ import annotations

from ...ir.op import Op
from ...nki.types import Access
from ..int_range import fits, int_range
from .frame import TileFrame
from .tile_common import scratch


def needs_narrow_wrap(op: Op) -> bool:
    """Whether the integer cast ``op`` targets an 8- or 16-bit integer dtype its source's range
    does not fit (32-bit targets: decomposition/wide_int_cast.py)."""
    src, dst = op.operand(0).type.dtype, op.result.type.dtype
    if not (src.is_int and dst.is_int and dst.bits < 32):
        return False
    return not fits(int_range(op.operand(0)), dst)


def wrapping_cast(em: TileFrame, op: Op, inst, x: Access, dst: Access) -> None:
    """dst = x.astype(dst dtype) keeping the low bits (NumPy's wrap-around)."""
    v = op.result
    if x.dtype.bits != 32:
        w = scratch(em, v, inst, "i32")
        em.b.tensor_copy(dst=w, src=x)
        x = w
    keep_low_bits(em, v, inst, x, dst)


def keep_low_bits(em: TileFrame, v, inst, x: Access, dst: Access) -> None:
    """dst (v's 8- or 16-bit integer tile) = the low bits of the 32-bit integer tile ``x``,
    sign-extended for a signed dtype: NumPy's wrap-around into v's dtype."""
    dt = v.type.dtype
    mask = (1 << dt.bits) - 1
    if not dt.is_signed:
        em.b.tensor_scalar(dst=dst, data=x, op0="bitwise_and", operand0=mask)
        return
    half = 1 << (dt.bits - 1)
    t = scratch(em, v, inst, "i32")
    em.b.tensor_scalar(dst=t, data=x, op0="bitwise_and", operand0=mask, op1="bitwise_xor", operand1=half)
    em.b.tensor_scalar(dst=dst, data=t, op0="add", operand0=float(-half))
