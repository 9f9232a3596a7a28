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
from .attention import _dead, _last_axis_reduce, _normalised, _scale
from .masks import _triangle

_WIDEN = {"bf16", "f16"}


def _source(v):
    """(root, ops) when ``v`` is reshapes / exact widening casts (bf16 / f16 -> f32) of ``root``."""
    ops = []
    while True:
        op = v.defining_op
        if isinstance(op, T.ReshapeOp):
            pass
        elif isinstance(op, T.CastOp) and op.operand(0).dtype.name in _WIDEN and v.dtype.name == "f32":
            pass
        else:
            return v, ops
        ops.append(op)
        v = op.operand(0)


def _key_source(kt):
    """(root, ops) when ``kt`` is a batch-only reshape of transpose(last two axes) of reshapes /
    widening casts of ``root`` (so Kᵀ's K is ``reshape(root)``)."""
    ops = []
    r = def_op(kt, T.ReshapeOp)
    if r is not None and r.operand(0).type.shape[-2:] == kt.type.shape[-2:] and kt.type.rank >= 2:
        ops.append(r)
        kt = r.operand(0)
    t = def_op(kt, T.TransposeOp)
    rank = kt.type.rank
    if t is None or tuple(t.attrs["perm"]) != tuple(range(rank - 2)) + (rank - 1, rank - 2):
        return None
    root, more = _source(t.operand(0))
    return root, ops + [t] + more


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
    if cols is None or rows is None or cols.attrs["axis"] % rank != rank - 1 or rows.attrs["axis"] % rank != rank - 2:
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
    """(S, c, causal, mask value, ops) when ``y`` is S·c (+ the causal constant); ops are the
    arithmetic ones (the constant may have other users)."""
    add = def_op(y, T.AddOp)
    if add is not None:
        for a, w in (add.operands, reversed(add.operands)):
            found = _causal(w)
            s, c, mul = _scale(a)
            if found is not None and mul is not None and a.type == y.type:
                return s, c, True, found[0], [add, mul]
        return None
    s, c, mul = _scale(y)
    return s, c, False, 0.0, [mul] if mul else []


class AttentionToGrouped(RewritePattern):
    """cast(softmax(c · Q Kᵀ (+ causal mask)) V) (causal or grouped) → grouped_attention(Q, K, V)"""

    root = (T.CastOp, T.MatmulOp)

    def match_and_rewrite(self, op, rw):
        if isinstance(op, T.CastOp):
            pv = def_op(op.operand(0), T.MatmulOp)
            if pv is None or len(pv.result.uses) != 1:
                return False
        else:
            pv = op
            if op.result.dtype.name != "f32":
                return False
        p, vx = pv.operands
        found = _normalised(p)
        exp = def_op(found[0], T.ExpOp) if found is not None else None
        sub = def_op(exp.operand(0), T.SubOp) if exp is not None else None
        if sub is None:
            return False
        y, mx = sub.operands
        red = _last_axis_reduce(mx, "max", y)
        scores = _scores(y) if red is not None else None
        if scores is None:
            return False
        s, c, causal, mask, score_ops = scores
        qk = def_op(s, T.MatmulOp)
        keys = _key_source(qk.operand(1)) if qk is not None else None
        if keys is None or s.dtype.name != "f32":
            return False
        qx, kt = qk.operands
        (q, q_ops), (k, k_ops), (v, v_ops) = _source(qx), keys, _source(vx)
        if not (q.dtype is k.dtype is v.dtype) or op.result.dtype is not q.dtype:
            return False
        q_shape, k_shape, v_shape = qx.type.shape, kt.type.shape[:-2] + kt.type.shape[:-3:-1], vx.type.shape
        if not (len(q_shape) == len(k_shape) == len(v_shape) >= 3):
            return False
        grouped = q_shape[:-2] != k_shape[:-2]
        if grouped:  # (..., G, R) query heads over (..., G, 1) KV heads: flatten to (..., G·R) / (..., G)
            if len(q_shape) < 4 or q_shape[:-3] != k_shape[:-3] or k_shape[-3] != 1 or v_shape[:-2] != k_shape[:-2]:
                return False
            q_shape = q_shape[:-4] + (q_shape[-4] * q_shape[-3],) + q_shape[-2:]
            k_shape, v_shape = k_shape[:-3] + k_shape[-2:], v_shape[:-3] + v_shape[-2:]
        elif not causal:
            return False
        attrs = {"scale": c, "causal": causal, "mask_value": float(mask)}
        if not supported(q_shape, k_shape, v_shape, q.dtype, attrs):
            return False
        inside = set(found[1] + [exp, sub, red, qk, pv] + score_ops)
        for x in inside - {pv}:
            if any(u.op not in inside and not _dead(u.op) for r in x.results for u in r.uses):
                return False  # an intermediate is used elsewhere: it has to exist
        operands = []
        for root, shape in ((q, q_shape), (k, k_shape), (v, v_shape)):
            operands.append(root if root.type.shape == shape else make(rw, T.ReshapeOp, [root], {"shape": shape}))
        out = make(rw, GroupedAttentionOp, operands, attrs)
        if out.type.shape != op.result.type.shape:
            out = make(rw, T.ReshapeOp, [out], {"shape": op.result.type.shape})
        return replace(rw, op, out)


GROUPED_ATTENTION_PATTERNS = (AttentionToGrouped(),)
