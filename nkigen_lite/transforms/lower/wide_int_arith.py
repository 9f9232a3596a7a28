"""Exact int32 / uint32 add, subtract and multiply on tiles: NumPy's wrap-around mod 2**32.

The engines do not wrap: VectorE computes in fp32 (exact only within 2**24) and GpSimd's exact
integer arithmetic saturates at the int32 range (x + x with x = 2**31 - 1 gave 2**31 - 1, not
-2). Each operand is split by bit-vector ops (raw bits, exact) into 16-bit limbs,
``lo = x & 0xFFFF`` and ``hi = x >> 16`` (logical shift: both in [0, 65535]), and the result
is rebuilt from limb arithmetic in which no value leaves fp32's exact range (or, for the
multiply's column sums, the int32 range on GpSimd):

- ``a ± b``: ``lo = al ± bl``, ``hi = ah ± bh + (lo >> 16)`` (the carry or borrow: the logical
  shift of a negative ``lo`` is 65535, i.e. -1 mod 2**16); the result is
  ``(hi << 16) | (lo & 0xFFFF)`` (the left shift drops the bits beyond 32). 11 instructions
  (9 with a constant operand) instead of 1.
- ``a * b`` mod 2**32 with b split into bytes b0..b3: ``al*b0 + (al*b1 << 8) + ((ah*b0 + al*b2)
  << 16) + ((ah*b1 + al*b3) << 24)``, every product below 65536 * 256 (fp32-exact), the terms
  carried through a low half (< 2**17) and a high half (< 2**27, GpSimd int32). 28 instructions.

Bits are the same for int32 and uint32, so one sequence serves both (an operand of another
dtype, e.g. int16 or bool, is first copied exactly into int32). ``needs_wrap`` keeps the one
instruction where the operands' value ranges (transforms/int_range.py) prove the exact result
fits the result dtype.
"""

from __future__ import annotations

from ...ir.dtypes import int32
from ...ir.op import Op
from ...ir.value import Value
from ...nki.types import Access
from ...tensor import ops as T
from ..int_range import exact_range, fits, int_range
from .frame import TileFrame
from .tile_common import Imm, scratch

WRAP_OPS = {T.AddOp: "add", T.SubOp: "subtract", T.MulOp: "multiply"}
LOW = 0xFFFF


def _exact(op: Op) -> tuple[int, int]:
    """The interval of the exact (unwrapped) result of an add / sub / mul or neg / abs / square."""
    if type(op) in WRAP_OPS:
        return exact_range(op)
    lo, hi = int_range(op.operand(0))
    if isinstance(op, T.SquareOp):
        corners = [lo * lo, hi * hi] + ([0] if lo <= 0 <= hi else [])
    else:
        corners = [-lo, -hi] + ([lo, hi] if isinstance(op, T.AbsOp) else [])
    return min(corners), max(corners)


def needs_wrap(op: Op) -> bool:
    """Whether ``op`` (an add / sub / mul, or a neg / abs of a signed value / square) has a
    32-bit integer result its operand ranges do not prove in range: the exact sequence is
    needed to wrap like NumPy."""
    dt = op.result.type.dtype
    if not dt.is_int or dt.bits != 32:
        return False
    if (
        type(op) in WRAP_OPS
        or isinstance(op, (T.NegOp, T.SquareOp))
        or (isinstance(op, T.AbsOp) and dt.is_signed)
    ):
        return not fits(_exact(op), dt)
    return False


def leaves_int32(op: Op) -> bool:
    """Whether the narrow-integer multiply or square ``op`` (computed in an int32 scratch, then
    wrapped) may leave the int32 range: uint16 * uint16 reaches 65535**2."""
    return isinstance(op, (T.MulOp, T.SquareOp)) and not fits(_exact(op), int32)


class _Limbs:
    """Emits the limb arithmetic of one tile: values are tile accesses or Python ints."""

    def __init__(self, em: TileFrame, v: Value, inst):
        self.em, self.v, self.inst = em, v, inst

    def tile(self):
        return scratch(self.em, self.v, self.inst, "i32")

    def bits(self, op0: str, k0: int, x, op1=None, k1=None):
        """(x op0 k0) op1 k1 with bit-vector ops (VectorE); ints fold."""
        if isinstance(x, int):
            y = _bitop(op0, x, k0)
            return y if op1 is None else _bitop(op1, y, k1)
        t = self.tile()
        self.em.note("vector", t.free_size)
        self.em.b.tensor_scalar(dst=t, data=x, op0=op0, operand0=k0, op1=op1, operand1=k1)
        return t

    def arith(self, alu: str, a, b, wide: bool = False):
        """a alu b (add / subtract / multiply) of limb values: VectorE in fp32 (exact while the
        result stays within 2**24), GpSimd int32 when ``wide``; int operands fold."""
        ia, ib = isinstance(a, int), isinstance(b, int)
        if ia and ib:
            return {"add": a + b, "subtract": a - b, "multiply": a * b}[alu]
        if alu == "multiply" and ((ia and a == 0) or (ib and b == 0)):
            return 0
        if (alu == "add" and ia and a == 0) or (alu == "multiply" and ia and a == 1):
            return b
        if (alu != "multiply" and ib and b == 0) or (alu == "multiply" and ib and b == 1):
            return a
        t = self.tile()
        if ia or ib:
            if wide:
                raise AssertionError("lowering bug: a wide limb sum with a constant")
            data, k, rev = (b, a, True) if ia else (a, b, False)
            self.em.note("vector", t.free_size)
            self.em.b.tensor_scalar(dst=t, data=data, op0=alu, operand0=float(k), reverse0=rev)
        else:  # limbs in SBUF: either engine (GpSimd exact in int32, VectorE within 2**24)
            eng = "gpsimd" if wide else self.em.pick_engine(("vector", "gpsimd"), 2 * t.free_size)
            if wide:
                self.em.note("gpsimd", 2 * t.free_size)
            self.em.b.tensor_tensor(dst=t, data1=a, data2=b, op=alu, engine=eng)
        return t


def _bitop(op: str, x: int, k: int) -> int:
    x &= 0xFFFFFFFF
    if op == "bitwise_and":
        return x & k
    if op == "bitwise_xor":
        return x ^ k
    if op == "right_shift":
        return x >> k
    return (x << k) & 0xFFFFFFFF


def _operand(em: TileFrame, v: Value, inst, x):
    """x as raw 32 bits: a Python int for a constant, else an access of a 32-bit integer tile."""
    if isinstance(x, Imm):
        return int(x.value) & 0xFFFFFFFF
    dt = x.dtype
    if dt.is_int and dt.bits == 32:
        return x
    t = scratch(em, v, inst, "i32")  # a narrower integer or bool: an exact copy widens it
    em.b.tensor_copy(dst=t, src=x)
    return t


def _halves(L: _Limbs, x):
    return L.bits("bitwise_and", LOW, x), L.bits("right_shift", 16, x)


def _join(L: _Limbs, hi, lo, dst: Access) -> None:
    """dst = (hi << 16) | (lo & 0xFFFF)."""
    top = L.bits("left_shift", 16, hi)
    low = L.bits("bitwise_and", LOW, lo)
    if isinstance(top, int) and isinstance(low, int):
        L.em.b.memset(dst=dst, value=L.v.type.dtype.python_value(top | low))
        return
    if isinstance(top, int) or isinstance(low, int):
        data, k = (low, top) if isinstance(top, int) else (top, low)
        L.em.note("vector", dst.free_size)
        L.em.b.tensor_scalar(dst=dst, data=data, op0="bitwise_or", operand0=k)
        return
    L.em.note("vector", 2 * dst.free_size)
    L.em.b.tensor_tensor(dst=dst, data1=top, data2=low, op="bitwise_or")


def _add_sub(L: _Limbs, alu: str, a, b, dst: Access) -> None:
    al, ah = _halves(L, a)
    bl, bh = _halves(L, b)
    lo = L.arith(alu, al, bl)
    hi = L.arith(alu, ah, bh)
    hi = L.arith("add", hi, L.bits("right_shift", 16, lo))
    _join(L, hi, lo, dst)


def _multiply(L: _Limbs, a, b, dst: Access) -> None:
    if isinstance(a, int):
        a, b = b, a
    al, ah = _halves(L, a)
    b0 = L.bits("bitwise_and", 0xFF, b)
    b1 = L.bits("right_shift", 8, b, "bitwise_and", 0xFF)
    b2 = L.bits("right_shift", 16, b, "bitwise_and", 0xFF)
    b3 = L.bits("right_shift", 24, b)
    mul = L.arith
    x0, x1 = mul("multiply", al, b0), mul("multiply", al, b1)  # each < 2**24
    x2 = mul("add", mul("multiply", ah, b0), mul("multiply", al, b2), wide=True)  # < 2**25
    x3 = mul("add", mul("multiply", ah, b1), mul("multiply", al, b3), wide=True)
    lo = mul("add", L.bits("bitwise_and", LOW, x0), L.bits("bitwise_and", 0xFF, x1, "left_shift", 8))
    hi = mul("add", L.bits("right_shift", 16, x0), L.bits("right_shift", 8, x1), wide=True)
    hi = mul("add", hi, x2, wide=True)
    hi = mul("add", hi, L.bits("bitwise_and", 0xFF, x3, "left_shift", 8), wide=True)
    hi = mul("add", hi, L.bits("right_shift", 16, lo), wide=True)  # < 2**27
    _join(L, hi, lo, dst)


def wrapping_binary(em: TileFrame, op: Op, inst, a, b, dst: Access, alu: str | None = None) -> None:
    """dst = a alu b mod 2**32 for an int32 / uint32 result (``alu`` add, subtract or multiply;
    by default ``op``'s; a, b: accesses of the result's extent or immediates)."""
    v = op.result
    L = _Limbs(em, v, inst)
    x, y = _operand(em, v, inst, a), _operand(em, v, inst, b)
    alu = alu or WRAP_OPS[type(op)]
    if alu == "multiply":
        _multiply(L, x, y, dst)
    else:
        _add_sub(L, alu, x, y, dst)
