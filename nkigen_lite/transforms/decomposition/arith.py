"""Decompositions of division and integer powers."""

from __future__ import annotations

from ...ir.errors import BuildError
from ...tensor import ops as T
from ..match import replace, splat_value
from .base import DecompositionPattern, Emitter, work_dtype

MAX_POW_EXPONENT = 64  # |n| above this keeps tensor.pow (the ALU power operator)


class DivToMulReciprocal(DecompositionPattern):
    """a / b → a * reciprocal(b)   (in f32 for narrower floats; one extra f32 rounding)"""

    root = T.DivOp

    def match_and_rewrite(self, op, rw):
        if self.caps.has_binary("div"):
            return False
        e = Emitter(rw)
        dt = op.result.dtype
        w = work_dtype(dt)
        a, b = (e.cast(e.cast(v, dt), w) for v in op.operands)
        return replace(rw, op, e.cast(e.mul(a, e.reciprocal(b)), dt))


def integer_exponent(v) -> int | None:
    """n when ``v`` is a constant splat holding the integer n (as an int or integral float)."""
    s = splat_value(v)
    if s is None or isinstance(s, bool):
        return None
    if isinstance(s, float):
        if not s.is_integer():
            return None
        s = int(s)
    return s if abs(s) <= MAX_POW_EXPONENT else None


class IntegerPowToMul(DecompositionPattern):
    """x ** n → multiplications by binary exponentiation (x**0 = 1, x**-n = reciprocal(x**n))"""

    root = T.PowOp

    def match_and_rewrite(self, op, rw):
        n = integer_exponent(op.operand(1))
        if n is None:
            return False
        r = op.result
        if n < 0 and not r.dtype.is_float:
            raise BuildError(
                f"{op.name}: integers to negative integer powers are not allowed (NumPy raises), "
                f"exponent {n} on {r.type}"
            )
        e = Emitter(rw)
        if n == 0:
            return replace(rw, op, e.full(1, r.dtype, r.shape))
        x = e.broadcast_to(e.cast(op.operand(0), r.dtype), r.shape)
        acc, base, k = None, x, abs(n)
        while True:
            if k & 1:
                acc = base if acc is None else e.mul(acc, base)
            k >>= 1
            if not k:
                break
            base = e.square(base)
        return replace(rw, op, e.reciprocal(acc) if n < 0 else acc)
