"""Canonicalization rules that recompose primitive chains into the ops the hardware has.

Every rule fires only when the replacement has exactly the type (shape and dtype) of the
value it replaces. ``produces`` names the op class a rule creates; ``canonicalize`` leaves out
the rules whose op the target does not run natively (a target without ``silu`` keeps
``x / (1 + exp(-x))`` as it is, which is also what decompose expands silu into there).
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.rewrite import RewritePattern, Rewriter
from ...ir.value import Value
from ...tensor import ops as T
from ..match import commuted, def_op, infer_type, is_exact_zero_term, is_splat_of, make, replace


def _rewrite_to(rw: Rewriter, op: Op, cls, operands: list[Value]) -> bool:
    if infer_type(cls, operands) != op.result.type:
        return False
    return replace(rw, op, make(rw, cls, operands))


def _one_plus_exp_neg(v: Value) -> Value | None:
    """x when ``v`` is ``1 + exp(-x)`` (either operand order) with the type of exp(-x)."""
    add = def_op(v, T.AddOp)
    if add is None:
        return None
    for one, e in commuted(add):
        exp = def_op(e, T.ExpOp)
        if exp is not None and is_splat_of(one, 1) and add.result.type == e.type:
            neg = def_op(exp.operand(0), T.NegOp)
            if neg is not None:
                return neg.operand(0)
    return None


class DivOneToReciprocal(RewritePattern):
    """1 / x → reciprocal(x)"""

    root = T.DivOp
    produces = T.ReciprocalOp

    def match_and_rewrite(self, op, rw):
        one, x = op.operands
        return is_splat_of(one, 1) and _rewrite_to(rw, op, T.ReciprocalOp, [x])


class ReciprocalSqrtToRsqrt(RewritePattern):
    """reciprocal(sqrt(x)) → rsqrt(x)"""

    root = T.ReciprocalOp
    produces = T.RsqrtOp

    def match_and_rewrite(self, op, rw):
        sq = def_op(op.operand(0), T.SqrtOp)
        return sq is not None and _rewrite_to(rw, op, T.RsqrtOp, [sq.operand(0)])


class DivSqrtToMulRsqrt(RewritePattern):
    """a / sqrt(x) → a * rsqrt(x)"""

    root = T.DivOp
    produces = T.RsqrtOp

    def match_and_rewrite(self, op, rw):
        a, s = op.operands
        sq = def_op(s, T.SqrtOp)
        if sq is None or is_splat_of(a, 1):
            return False
        r = infer_type(T.RsqrtOp, [sq.operand(0)])
        if r != s.type or infer_type(T.MulOp, [a, s]) != op.result.type:
            return False
        return replace(rw, op, make(rw, T.MulOp, [a, make(rw, T.RsqrtOp, [sq.operand(0)])]))


class SubFromZeroToNeg(RewritePattern):
    """0 - x → neg(x)   (float x only with a -0.0: +0.0 - +0.0 is +0.0 where -(+0.0) is -0.0)"""

    root = T.SubOp
    produces = T.NegOp

    def match_and_rewrite(self, op, rw):
        zero, x = op.operands
        return is_exact_zero_term(zero, op.result, -1) and _rewrite_to(rw, op, T.NegOp, [x])


class MulMinusOneToNeg(RewritePattern):
    """x * -1 → neg(x)"""

    root = T.MulOp
    produces = T.NegOp

    def match_and_rewrite(self, op, rw):
        for x, m1 in commuted(op):
            if is_splat_of(m1, -1) and _rewrite_to(rw, op, T.NegOp, [x]):
                return True
        return False


class SigmoidFromExp(RewritePattern):
    """reciprocal(1 + exp(-x)) → sigmoid(x)"""

    root = T.ReciprocalOp
    produces = T.SigmoidOp

    def match_and_rewrite(self, op, rw):
        x = _one_plus_exp_neg(op.operand(0))
        return x is not None and _rewrite_to(rw, op, T.SigmoidOp, [x])


class SiluFromSigmoid(RewritePattern):
    """x * sigmoid(x) → silu(x)"""

    root = T.MulOp
    produces = T.SiluOp

    def match_and_rewrite(self, op, rw):
        for x, s in commuted(op):
            sig = def_op(s, T.SigmoidOp)
            if sig is not None and sig.operand(0) is x and _rewrite_to(rw, op, T.SiluOp, [x]):
                return True
        return False


class SiluFromExp(RewritePattern):
    """x / (1 + exp(-x)) → silu(x)"""

    root = T.DivOp
    produces = T.SiluOp

    def match_and_rewrite(self, op, rw):
        x, den = op.operands
        return _one_plus_exp_neg(den) is x and _rewrite_to(rw, op, T.SiluOp, [x])


class MulSelfToSquare(RewritePattern):
    """x * x → square(x)"""

    root = T.MulOp
    produces = T.SquareOp

    def match_and_rewrite(self, op, rw):
        a, b = op.operands
        return a is b and _rewrite_to(rw, op, T.SquareOp, [a])


RECOMPOSE_PATTERNS = (
    DivOneToReciprocal(),
    ReciprocalSqrtToRsqrt(),
    DivSqrtToMulRsqrt(),
    SubFromZeroToNeg(),
    MulMinusOneToNeg(),
    SigmoidFromExp(),
    SiluFromSigmoid(),
    SiluFromExp(),
    MulSelfToSquare(),
)
