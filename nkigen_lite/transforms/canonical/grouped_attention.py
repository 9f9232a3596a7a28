"""Causal or grouped-query attention over few keys becomes one ``tensor.grouped_attention``
(lowered by lower/grouped_attention.py with K and V loaded once per KV head and the DMAs batched
across heads).

Matched, with every intermediate used only inside the pattern:
``O = P @ V`` with ``P = E · 1/ΣE`` (or ``E / ΣE``), ``E = exp(Y - max(Y))``, ``Y = S·c`` or
``Y = S·c + where(iota_j - iota_i <= 0, 0, mask)`` (the causal constant canonical/masks.py makes
of ``np.triu(full(mask), 1)``; also written ``where(... >= 1, mask, 0)``, or a small mask left a
dense constant), ``S = Q @ Kᵀ``; the
result cast to Q's source dtype (or Q, K, V already f32). Q, K and V may be exact widening casts
(bf16/f16 → f32) of their sources and reshapes of them; ``Kᵀ`` a last-two-axes transpose under
batch-only reshapes — so the form canonical/gqa.py leaves for ``np.repeat`` of the KV heads
(query heads split (..., G, R), K and V (..., G, 1)) is matched and flattened to the op's
(..., G·R) query heads over (..., G) KV heads. The op takes the uncast sources: the casts happen on
chip. Formed only when the attention is causal or grouped (plain attention stays with the row
pipeline and canonical/attention.py) and lower/grouped_attention.py supports the shapes. The op
computes the same function (fp32 inside); the lowering rounds within fp32 tolerance.
"""

from __future__ import annotations

import numpy as np

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.composites_grouped_attention import GroupedAttentionOp
from ..lower.grouped_attention import supported
from ..match import def_op, make, replace, splat_value
from .attention import _dead, _exp_argument, _last_axis_reduce, _normalised, _scale
from .masks import _triangle

_WIDEN = {"bf16", "f16"}


def _source(v):
    """The value ``v`` is reshapes / exact widening casts (bf16 / f16 -> f32) of."""
    while True:
        op = v.defining_op
        widen = isinstance(op, T.CastOp) and op.operand(0).dtype.name in _WIDEN and v.dtype.name == "f32"
        if not (isinstance(op, T.ReshapeOp) or widen):
            return v
        v = op.operand(0)


def _key_source(kt):
    """K's source when ``kt`` is a batch-only reshape of transpose(last two axes) of reshapes /
    widening casts of it (so Kᵀ's K is a reshape of the source), else None."""
    r = def_op(kt, T.ReshapeOp)
    if r is not None and r.operand(0).type.shape[-2:] == kt.type.shape[-2:] and kt.type.rank >= 2:
        kt = r.operand(0)
    t = def_op(kt, T.TransposeOp)
    rank = kt.type.rank
    if t is None or tuple(t.attrs["perm"]) != tuple(range(rank - 2)) + (rank - 1, rank - 2):
        return None
    return _source(t.operand(0))


def _causal(w):
    """(mask value, ops) when ``w`` is the causal constant: mask above the diagonal, 0 on and
    below it (leading dims of extent 1)."""
    if any(d != 1 for d in w.type.shape[:-2]) or w.type.shape[-1] != w.type.shape[-2]:
        return None
    const = def_op(w, T.ConstantOp)
    if const is not None:  # a mask small enough to stay folded
        found = _triangle(np.asarray(const.attrs["value"].array).reshape(w.type.shape[-2:]))
        if found is not None and w.dtype.is_float:
            on, off, cmp, k = found
            if (cmp, k, float(on)) == (T.LessEqualOp, 0, 0.0):
                return float(off), [const]
            if (cmp, k, float(off)) == (T.GreaterEqualOp, 1, 0.0):
                return float(on), [const]
        return None
    op = def_op(w, T.WhereOp)
    if op is None:
        return None
    cond, on, off = op.operands
    cmp = def_op(cond, (T.LessEqualOp, T.GreaterEqualOp))
    if cmp is None:
        return None
    diff, k = cmp.operands
    sub = def_op(diff, T.SubOp)
    if sub is None:
        return None
    cols, rows = (def_op(x, T.IotaOp) for x in sub.operands)
    rank = diff.type.rank
    if cols is None or rows is None:
        return None
    if cols.attrs["axis"] % rank != rank - 1 or rows.attrs["axis"] % rank != rank - 2:
        return None
    kv, on_v, off_v = splat_value(k), splat_value(on), splat_value(off)
    if isinstance(cmp, T.LessEqualOp) and kv == 0 and on_v == 0:
        mask = off_v
    elif isinstance(cmp, T.GreaterEqualOp) and kv == 1 and off_v == 0:
        mask = on_v
    else:
        return None
    if not isinstance(mask, float):
        return None
    return mask, [op, cmp, sub, cols, rows]


def _scores(y):
    """(S, c, True, mask value, ops) when ``y`` is S·c (or S) + the causal constant; ops are the
    arithmetic ones (the constant may have other users)."""
    add = def_op(y, T.AddOp)
    if add is None:
        return None
    for a, w in (add.operands, reversed(add.operands)):
        found = _causal(w)
        s, c, mul = _scale(a)
        if found is not None and a.type == y.type:
            return s, c, True, found[0], [add] + ([mul] if mul else [])
    return None


def _masked_exp_argument(x):
    """(S, c, True, mask value, ops) when ``x`` is Y - max(Y) with Y = S·c + the causal constant."""
    sub = def_op(x, T.SubOp)
    if sub is None:
        return None
    y, mx = sub.operands
    red = _last_axis_reduce(mx, "max", y)
    found = _scores(y) if red is not None else None
    if found is None:
        return None
    return found[:4] + (found[4] + [sub, red],)


def _softmax_pv(pv):
    """(S, c, causal, mask value, ops) when matmul ``pv`` is softmax(S·c (+ causal mask)) @ V."""
    found = _normalised(pv.operand(0))
    exp = def_op(found[0], T.ExpOp) if found is not None else None
    if exp is None:
        return None
    scores = _masked_exp_argument(exp.operand(0))
    if scores is None:  # unmasked: Y - max(Y), or the scale-folded form (softmax_scale.py)
        plain = _exp_argument(exp.operand(0))
        if plain is None:
            return None
        scores = (plain[0], plain[1], False, 0.0, plain[2])
    s, c, causal, mask, ops = scores
    return s, c, causal, mask, ops + found[1] + [exp, pv]


def _op_shapes(q_shape, k_shape, v_shape, causal):
    """The op's (q, k, v) shapes: grouped (..., G, R) query heads over (..., G, 1) KV heads are
    flattened to (..., G·R) over (..., G); equal batch dims only when causal; else None."""
    if not (len(q_shape) == len(k_shape) == len(v_shape) >= 3) or k_shape[:-2] != v_shape[:-2]:
        return None
    if q_shape[:-2] == k_shape[:-2]:
        return (q_shape, k_shape, v_shape) if causal else None
    if len(q_shape) < 4 or q_shape[:-3] != k_shape[:-3] or k_shape[-3] != 1:
        return None
    q_shape = q_shape[:-4] + (q_shape[-4] * q_shape[-3],) + q_shape[-2:]
    return q_shape, k_shape[:-3] + k_shape[-2:], v_shape[:-3] + v_shape[-2:]


class AttentionToGrouped(RewritePattern):
    """cast(softmax(c · Q Kᵀ (+ causal mask)) V) (causal or grouped) → grouped_attention(Q, K, V)"""

    root = (T.CastOp, T.MatmulOp)

    def match_and_rewrite(self, op, rw):
        pv = def_op(op.operand(0), T.MatmulOp) if isinstance(op, T.CastOp) else op
        if pv is None or (pv is op and op.result.dtype.name != "f32") or len(pv.result.uses) != 1:
            return False
        found = _softmax_pv(pv)
        qk = def_op(found[0], T.MatmulOp) if found is not None else None
        k = _key_source(qk.operand(1)) if qk is not None else None
        if k is None or qk.result.dtype.name != "f32":
            return False
        _s, c, causal, mask, inside = found
        qx, kt, vx = qk.operand(0), qk.operand(1), pv.operand(1)
        q, v = _source(qx), _source(vx)
        if not (q.dtype is k.dtype is v.dtype) or op.result.dtype is not q.dtype:
            return False
        shapes = _op_shapes(qx.type.shape, kt.type.shape[:-2] + kt.type.shape[:-3:-1], vx.type.shape, causal)
        attrs = {"scale": c, "causal": causal, "mask_value": float(mask)}
        if shapes is None or not supported(*shapes, q.dtype, attrs):
            return False
        inside = set(inside + [qk])
        for x in inside - {pv}:
            if any(u.op not in inside and not _dead(u.op) for r in x.results for u in r.uses):
                return False  # an intermediate is used elsewhere: it has to exist
        operands = [
            root if root.type.shape == shape else make(rw, T.ReshapeOp, [root], {"shape": shape})
            for root, shape in zip((q, k, v), shapes)
        ]
        out = make(rw, GroupedAttentionOp, operands, attrs)
        if out.type.shape != op.result.type.shape:
            out = make(rw, T.ReshapeOp, [out], {"shape": op.result.type.shape})
        return replace(rw, op, out)


GROUPED_ATTENTION_PATTERNS = (AttentionToGrouped(),)
