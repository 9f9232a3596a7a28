"""Wrapping int32 / uint32 arithmetic whose result is masked: computed on the low bits only.

``y & c`` with ``c >= 0`` a constant keeps the low ``k = c.bit_length()`` bits of ``y``; when
``y`` is a tree of ``+ - *`` and negation in the 32-bit dtype (NumPy wraps them mod 2**32, and
2**k divides 2**32), those bits depend only on the low ``k`` bits of the tree's leaves. So each
leaf becomes ``leaf & (2**k - 1)`` and each constant ``c mod 2**k``: the new tree is congruent
to ``y`` mod 2**k, and its operands' ranges (transforms/int_range.py: an and with a
non-negative value lies in [0, that value]) bound every intermediate, so the arithmetic no
longer needs the wrap-around sequences of wide_int_arith.py (11 instructions per add, 28 per
multiply) where the bounded result fits the dtype: ``(i * 3 + 7) & 255`` is
``((i & 255) * 3 + 7) & 255``, three one-instruction passes instead of 41.

Applied only when some op of the tree needs the wrap (its exact result's range does not fit
the dtype, as wide_int_arith.needs_wrap decides) and none does on the masked leaves and the tree's ops have
no other use (a shared intermediate stays as it is, and is a leaf here).
"""

from __future__ import annotations

from ...ir.value import Value
from ...tensor import ops as T
from ..int_range import exact_range, fits, int_range
from ..match import make, replace, splat_value
from .base import DecompositionPattern, Emitter

_TREE = (T.AddOp, T.SubOp, T.MulOp, T.NegOp)


def _mask_bits(and_op) -> tuple[Value, int] | None:
    """(the other operand, k) of ``y & c`` with c a non-negative constant of k bits."""
    for y, c in (and_op.operands, reversed(and_op.operands)):
        k = splat_value(c)
        if k is not None and not isinstance(k, bool) and int(k) >= 0 and y.shape == and_op.result.shape:
            return y, int(k).bit_length()
    return None


def _tree_ops(y: Value, root: bool = True) -> list:
    """The tree's ops (post-order) above its leaves: +, -, *, neg of y's dtype, each used once
    (the root by the and)."""
    op = y.defining_op
    if not isinstance(op, _TREE) or op.result.dtype != y.dtype or (not root and y.num_uses != 1):
        return []
    out = []
    for u in op.operands:
        out += _tree_ops(u, root=False)
    return out + [op]


def _needs_wrap(t) -> bool:
    """Whether the operand ranges of the tree op ``t`` leave its exact result outside its dtype."""
    if isinstance(t, T.NegOp):
        lo, hi = int_range(t.operand(0))
        return not fits((-hi, -lo), t.result.dtype)
    return not fits(exact_range(t), t.result.dtype)


def _bounded(ops: list, k: int) -> bool:
    """Whether the tree on leaves in [0, 2**k - 1] keeps every result within its dtype (so the
    rewrite removes every wrap, and does not match its own output again)."""
    low = (1 << k) - 1
    inside = {t.result for t in ops}
    got: dict = {}

    def rng(v):
        if v in inside:
            return got[v]
        c = splat_value(v)
        return (int(c) & low,) * 2 if c is not None and v.shape == () else (0, low)

    for t in ops:
        if isinstance(t, T.NegOp):
            lo, hi = rng(t.operand(0))
            got[t.result] = (-hi, -lo)
        else:
            a, b = (rng(u) for u in t.operands)
            if isinstance(t, T.AddOp):
                got[t.result] = (a[0] + b[0], a[1] + b[1])
            elif isinstance(t, T.SubOp):
                got[t.result] = (a[0] - b[1], a[1] - b[0])
            else:
                corners = [x * y for x in a for y in b]
                got[t.result] = (min(corners), max(corners))
        if not fits(got[t.result], t.result.dtype):
            return False
    return True


class LowBitsArith(DecompositionPattern):
    """(tree of wrapping int32 / uint32 + - * neg) & c, c >= 0 → the tree on its leaves' low
    c.bit_length() bits, then & c"""

    root = T.BitwiseAndOp

    def match_and_rewrite(self, op, rw):
        dt = op.result.dtype
        if not dt.is_int or dt.bits != 32:
            return False
        got = _mask_bits(op)
        if got is None:
            return False
        y, k = got
        if k >= 32 or y.num_uses != 1:
            return False
        ops = _tree_ops(y)
        if not ops or not any(_needs_wrap(t) for t in ops) or not _bounded(ops, k):
            return False
        e = Emitter(rw)
        low = (1 << k) - 1
        new: dict = {}

        def leaf(v: Value) -> Value:
            if v not in new:
                c = splat_value(v)
                if c is not None and v.shape == ():
                    new[v] = v if int(c) & low == int(c) else e.const(int(c) & low, dt)
                else:
                    new[v] = e.bitwise_and(v, low)
            return new[v]

        inside = {t.result for t in ops}
        for t in ops:
            args = [new[u] if u in inside else leaf(u) for u in t.operands]
            new[t.result] = make(rw, type(t), args)
        masked = new[y]
        c = op.operand(1) if op.operand(0) is y else op.operand(0)
        return replace(rw, op, e.bitwise_and(masked, c))
