"""Canonicalization rules for algebraic identities (neutral elements, involutions).

A rule replaces an op by one of its operands only when that operand already has the op's
result type: ``x * 1`` with x int32 and 1 float32 is float32, so it is not folded.
"""

from __future__ import annotations

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ..match import commuted, def_op, full, is_exact_zero_term, is_splat_of, make, replace


def _forward(rw, op, x) -> bool:
    return x.type == op.result.type and replace(rw, op, x)


class Involution(RewritePattern):
    """neg(neg(x)) → x;  logical_not(logical_not(x)) → x;  bitwise_not(bitwise_not(x)) → x"""

    root = (T.NegOp, T.LogicalNotOp, T.BitwiseNotOp)

    def match_and_rewrite(self, op, rw):
        inner = def_op(op.operand(0), type(op))
        return inner is not None and _forward(rw, op, inner.operand(0))


class AddZero(RewritePattern):
    """x + 0 → x   (float x only with a -0.0: -0.0 + 0.0 is +0.0, so x + 0.0 is kept)"""

    root = T.AddOp

    def match_and_rewrite(self, op, rw):
        return any(is_exact_zero_term(z, op.result, -1) and _forward(rw, op, x) for x, z in commuted(op))


class SubZero(RewritePattern):
    """x - 0 → x   (float x only with a +0.0: x - (-0.0) is x + 0.0)"""

    root = T.SubOp

    def match_and_rewrite(self, op, rw):
        x, z = op.operands
        return is_exact_zero_term(z, op.result, +1) and _forward(rw, op, x)


class MulOne(RewritePattern):
    """x * 1 → x"""

    root = T.MulOp

    def match_and_rewrite(self, op, rw):
        return any(is_splat_of(one, 1) and _forward(rw, op, x) for x, one in commuted(op))


class DivOne(RewritePattern):
    """x / 1 → x"""

    root = T.DivOp

    def match_and_rewrite(self, op, rw):
        x, one = op.operands
        return is_splat_of(one, 1) and _forward(rw, op, x)


class ReduceWithoutAxes(RewritePattern):
    """reduce(x, axes=[]) → cast(x) for sum / prod / max / min / mean;  → x != 0 for any / all"""

    root = T.ReduceOp

    def match_and_rewrite(self, op, rw):
        kind = op.attrs["kind"]
        if op.attrs["axes"] or kind in ("var", "std"):
            return False
        x, r = op.operand(0), op.result
        if kind in ("any", "all"):
            zero = full(rw, 0, x.dtype)
            return replace(rw, op, make(rw, T.NotEqualOp, [x, zero]))
        if x.dtype is r.dtype:
            return replace(rw, op, x)
        return replace(rw, op, make(rw, T.CastOp, [x], {"dtype": r.dtype}))


IDENTITY_PATTERNS = (Involution(), AddZero(), SubZero(), MulOne(), DivOne(), ReduceWithoutAxes())
