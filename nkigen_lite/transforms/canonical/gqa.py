"""Grouped-query attention written with ``np.repeat`` reads the shared KV heads, never a copy.

``np.repeat(k, r, axis=a)`` traces to ``reshape → broadcast_to → reshape`` (a *repeat* of ``k``
along ``a``: each of the G heads repeated r times, merged into G·r). Lowered as written, the
final reshape of a broadcast is not a view and becomes an HBM → HBM copy of the repeated heads.
These rules move the repeat into the matmul's batch broadcasting instead:

- ``cast(repeat(x)) → repeat(cast(x))`` and ``transpose(repeat(x)) → repeat(transpose(x))``
  (both commute with repeating a batch axis);
- ``matmul(A, repeat_a(x))`` with ``a`` a batch axis → ``merge_a(matmul(split_a(A), x'))``:
  A's axis G·r is split into (G, r), ``x'`` is x with a unit axis after ``a`` (a stride-0
  batch dim of the matmul: every query head of a group reads its KV head), and the result's
  (G, r) axes are merged back;
- a *merge* (a reshape joining two adjacent batch axes, neither of the last two) read by an
  elementwise op, a cast, a ``where`` or a keepdims reduction over later axes moves below it:
  ``f(merge(y), z) → merge(f(y, z'))``, z' being z with a unit axis when it broadcasts along
  the merged axis. The softmax between the two attention matmuls then runs over (G, r, ...)
  and the merge ends up after the second matmul, where it is a view.

All of them rename or regroup elements only: results are bit-identical.
"""

from __future__ import annotations

from ...ir.rewrite import RewritePattern
from ...ir.value import Value
from ...tensor import ops as T
from ..match import def_op, make, replace

_ELEMENTWISE = (T.UnaryOp, T.BinaryOp, T.WhereOp, T.CastOp)


def match_repeat(v: Value):
    """(x, axis, r) when ``v`` = reshape(broadcast_to(reshape(x))) repeats each index of x's
    ``axis`` r times (``np.repeat(x, r, axis)``), else None. ``x`` is a Value, or (src, shape)
    when the first reshape also reshaped ``src`` (reshapes of reshapes are folded): then x is
    ``reshape(src, shape)``, built by ``_source``."""
    merge = def_op(v, T.ReshapeOp)
    bcast = def_op(merge.operand(0), T.BroadcastToOp) if merge is not None else None
    unit = def_op(bcast.operand(0), T.ReshapeOp) if bcast is not None else None
    if unit is None:
        return None
    src = unit.operand(0)
    us, bs = unit.result.type.shape, bcast.result.type.shape
    for a in range(len(us) - 1):
        xs = us[: a + 1] + us[a + 2 :]
        if us[a + 1] != 1 or len(bs) != len(us):
            continue
        r = bs[a + 1]
        if bs == xs[: a + 1] + (r,) + xs[a + 1 :] and v.type.shape == xs[:a] + (xs[a] * r,) + xs[a + 1 :]:
            return (src if src.type.shape == xs else (src, xs)), a, r
    return None


def _source(rw, x) -> Value:
    """The un-repeated value of ``match_repeat`` (a reshape of its source when needed)."""
    if isinstance(x, Value):
        return x
    src, shape = x
    return make(rw, T.ReshapeOp, [src], {"shape": shape})


def _repeat(rw, x: Value, a: int, r: int) -> Value:
    xs = x.type.shape
    u = make(rw, T.ReshapeOp, [x], {"shape": xs[: a + 1] + (1,) + xs[a + 1 :]})
    b = make(rw, T.BroadcastToOp, [u], {"shape": xs[: a + 1] + (r,) + xs[a + 1 :]})
    return make(rw, T.ReshapeOp, [b], {"shape": xs[:a] + (xs[a] * r,) + xs[a + 1 :]})


class RepeatBelowCast(RewritePattern):
    """cast(repeat(x)) → repeat(cast(x))"""

    root = T.CastOp

    def match_and_rewrite(self, op, rw):
        found = match_repeat(op.operand(0))
        if found is None:
            return False
        x, a, r = found
        c = make(rw, T.CastOp, [_source(rw, x)], dict(op.attrs))
        return replace(rw, op, _repeat(rw, c, a, r))


class RepeatBelowTranspose(RewritePattern):
    """transpose(repeat_a(x), perm) → repeat_{perm⁻¹(a)}(transpose(x, perm))"""

    root = T.TransposeOp

    def match_and_rewrite(self, op, rw):
        found = match_repeat(op.operand(0))
        if found is None:
            return False
        x, a, r = found
        perm = tuple(op.attrs["perm"])
        t = make(rw, T.TransposeOp, [_source(rw, x)], {"perm": perm})
        return replace(rw, op, _repeat(rw, t, perm.index(a), r))


class GroupedMatmul(RewritePattern):
    """matmul(A, repeat_a(x)) → merge_a(matmul(split_a(A), unit_a(x)))   (a a batch axis)"""

    root = T.MatmulOp

    def match_and_rewrite(self, op, rw):
        a_v, b_v = op.operands
        found = match_repeat(b_v)
        if found is None:
            return False
        x, a, r = found
        rank = b_v.type.rank
        if a >= rank - 2 or a_v.type.rank != rank or a_v.type.shape[a] != b_v.type.shape[a]:
            return False
        src = x if isinstance(x, Value) else x[0]
        xs = x.type.shape if isinstance(x, Value) else x[1]
        g, ash = xs[a], a_v.type.shape
        a4 = make(rw, T.ReshapeOp, [a_v], {"shape": ash[:a] + (g, r) + ash[a + 1 :]})
        x4 = make(rw, T.ReshapeOp, [src], {"shape": xs[: a + 1] + (1,) + xs[a + 1 :]})
        mm = make(rw, T.MatmulOp, [a4, x4])
        return replace(rw, op, make(rw, T.ReshapeOp, [mm], {"shape": op.result.type.shape}))


def _merge(v: Value):
    """(y, a) when ``v`` = reshape(y) merges y's adjacent axes a, a+1, both batch axes (before
    the last two), else None."""
    op = def_op(v, T.ReshapeOp)
    if op is None:
        return None
    y = op.operand(0)
    ys, vs = y.type.shape, v.type.shape
    for a in range(len(ys) - 3):
        if vs == ys[:a] + (ys[a] * ys[a + 1],) + ys[a + 2 :]:
            return y, a
    return None


class MergeBelowElementwise(RewritePattern):
    """f(merge_a(y), z) → merge_a(f(y, z'))   (f elementwise / cast / where / keepdims reduce
    over later axes; z a merge of the same split, or broadcast along the merged axis)"""

    root = _ELEMENTWISE + (T.ReduceOp,)

    def match_and_rewrite(self, op, rw):
        merged = [_merge(u) for u in op.operands]
        first = next((m for m in merged if m is not None), None)
        if first is None:
            return False
        y0, a = first
        split = y0.type.shape[a : a + 2]
        out = op.result.type.shape
        r = len(out)
        if isinstance(op, T.ReduceOp):
            axes = [ax % r for ax in op.attrs["axes"]]
            if not op.attrs["keepdims"] or any(ax <= a for ax in axes):
                return False
        plan = []
        for u, m in zip(op.operands, merged):
            if m is not None and m[1] == a and m[0].type.shape[a : a + 2] == split:
                plan.append(("split", m[0]))
                continue
            pa = a - (r - u.type.rank)  # the merged axis among u's axes (right-aligned)
            if pa < 0 or all(d == 1 for d in u.type.shape[: pa + 1]):
                plan.append(("keep", u))  # broadcasts against the split axes as it is
            elif u.type.shape[pa] == 1:
                plan.append(("unit", u, pa))
            else:
                return False
        operands = []
        for p in plan:
            if p[0] == "unit":
                _, u, pa = p
                s = u.type.shape
                operands.append(make(rw, T.ReshapeOp, [u], {"shape": s[:pa] + (1,) + s[pa:]}))
            else:
                operands.append(p[1])
        attrs = dict(op.attrs)
        if isinstance(op, T.ReduceOp):
            attrs["axes"] = tuple(ax % r + 1 for ax in op.attrs["axes"])
        new = make(rw, type(op), operands, attrs)
        return replace(rw, op, make(rw, T.ReshapeOp, [new], {"shape": out}))


GQA_PATTERNS = (RepeatBelowCast(), RepeatBelowTranspose(), GroupedMatmul(), MergeBelowElementwise())
