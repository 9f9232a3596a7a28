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

Applied only when some op of the tree needs the wrap (its exact result's range, carried
through the tree from its leaves' ranges, does not fit the dtype) and none does on the masked
leaves, and the tree's ops have no other use (a shared intermediate stays as it is, and is a
leaf here).
"""

from __future__ import annotations

from ...ir.value import Value
from ...tensor import ops as T
from ..int_range import arith_range, dtype_range, fits, int_range
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


def _op_range(t, rs: list) -> tuple[int, int]:
    """The exact result interval of the tree op ``t`` from its operands' intervals ``rs``."""
    if isinstance(t, T.NegOp):
        lo, hi = rs[0]
        return -hi, -lo
    return arith_range(t, rs[0], rs[1])


def _any_wraps(ops: list) -> bool:
    """Whether some tree op's exact result leaves its dtype, the intervals carried through the
    tree itself (a wrapped op's result is its dtype's whole range) and only the leaves'
    asked of int_range: its depth-bounded walk would call a deep tree's upper ops unbounded
    after the rewrite too, and the pattern would match its own output forever."""
    got: dict = {}
    wraps = False
    for t in ops:
        r = _op_range(t, [got[u] if u in got else int_range(u) for u in t.operands])
        if not fits(r, t.result.dtype):
            wraps, r = True, dtype_range(t.result.dtype)
        got[t.result] = r
    return wraps


def _bounded(ops: list, k: int) -> bool:
    """Whether the tree on leaves in [0, 2**k - 1] keeps every result within its dtype (so the
    rewrite removes every wrap, and does not match its own output again)."""
    low = (1 << k) - 1
    got: dict = {}

    def rng(v):
        if v in got:
            return got[v]
        c = splat_value(v)
        return (int(c) & low,) * 2 if c is not None and v.shape == () else (0, low)

    for t in ops:
        got[t.result] = _op_range(t, [rng(u) for u in t.operands])
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
        if not ops or not _any_wraps(ops) or not _bounded(ops, k):
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
