"""One decode step's attention over a KV cache, written out, becomes one
``tensor.decode_attention(q, k, v, pos, scale)`` (lowered by lower/decode_attention.py: each
cache read once in a few large DMAs, the scores kept on chip).

Matched, with every intermediate used only inside the pattern (the form
workloads/qwen3_decode.py writes):
``O = cast(P, q.dtype) @ V`` with ``P = E / ΣE`` (or ``E · 1/ΣE``), ``E = exp(Y - max(Y))``,
``Y = where(iota_j <= pos, S·c, -inf)`` (the iota along the key axis, or the equivalent
``arange`` constant; ``pos`` a 0-d int32), ``S = cast(Q @ Kᵀ, f32)``; Q (G, R, D), K (G, N, D),
V (G, N, Dv) of one 16-bit float dtype and every reduction over the last (key) axis. The op
computes the same function (fp32 inside, the scores and probabilities rounded to the dtype as
the program rounds them)."""

from __future__ import annotations

import numpy as np

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.composites_decode_attention import DecodeAttentionOp
from ..lower.decode_attention import supported
from ..match import def_op, make, replace, splat_value
from .attention import _dead, _last_axis_reduce, _normalised, _scale


def _key_index(v, n: int) -> list | None:
    """The ops making ``v`` when it holds the key index along its last axis (an ``iota`` along
    the last axis, or an ``arange(n)`` constant), else None."""
    iota = def_op(v, T.IotaOp)
    if iota is not None:
        rank = v.type.rank
        return (
            [iota] if rank >= 1 and iota.attrs["axis"] % rank == rank - 1 and v.type.shape[-1] == n else None
        )
    const = def_op(v, T.ConstantOp)
    if const is not None and v.type.shape[-1:] == (n,) and v.dtype.is_int:
        a = np.asarray(const.attrs["value"].array)
        if np.array_equal(a.reshape(-1, n), np.broadcast_to(np.arange(n), (a.size // n, n))):
            return [const]
    return None


def _visible(cond, n: int):
    """(pos, ops) when ``cond`` is ``key index <= pos`` (or ``pos >= key index``) with ``pos`` a
    0-d int32, else None."""
    cmp = def_op(cond, (T.LessEqualOp, T.GreaterEqualOp))
    if cmp is None:
        return None
    idx, pos = cmp.operands if isinstance(cmp, T.LessEqualOp) else reversed(cmp.operands)
    if pos.type.rank != 0 or pos.dtype.name != "i32":
        return None
    found = _key_index(idx, n)
    return (pos, [cmp] + found) if found is not None else None


def _masked_scores(y, n: int):
    """(S, c, pos, ops) when ``y`` is ``where(key index <= pos, S·c, -inf)``."""
    where = def_op(y, T.WhereOp)
    if where is None:
        return None
    cond, on, off = where.operands
    if splat_value(off) != float("-inf") or on.type != y.type:
        return None
    vis = _visible(cond, n)
    if vis is None:
        return None
    s, c, mul = _scale(on)
    return s, c, vis[0], [where] + ([mul] if mul else [])  # the mask may be shared


class DecodeAttentionToOp(RewritePattern):
    """cast(softmax(where(j <= pos, c · f32(Q Kᵀ), -inf)), dt) @ V → decode_attention(Q, K, V, pos)"""

    root = T.MatmulOp

    def match_and_rewrite(self, op, rw):
        pc, v = op.operands
        cast_p = def_op(pc, T.CastOp)
        if cast_p is None or op.result.dtype is not pc.dtype:
            return False
        found = _normalised(cast_p.operand(0))
        exp = def_op(found[0], T.ExpOp) if found is not None else None
        sub = def_op(exp.operand(0), T.SubOp) if exp is not None else None
        if sub is None:
            return False
        y, mx = sub.operands
        red = _last_axis_reduce(mx, "max", y)
        scores = _masked_scores(y, y.type.shape[-1]) if red is not None else None
        if scores is None:
            return False
        s, c, pos, score_ops = scores
        widen = def_op(s, T.CastOp)
        qk = def_op(widen.operand(0), T.MatmulOp) if widen is not None else None
        kt = def_op(qk.operand(1), T.TransposeOp) if qk is not None else None
        if kt is None or s.dtype.name != "f32" or tuple(kt.attrs["perm"]) != (0, 2, 1):
            return False
        q, k = qk.operand(0), kt.operand(0)
        dt = q.dtype
        if not (k.dtype is dt and v.dtype is dt and qk.result.dtype is dt and pc.dtype is dt):
            return False
        if not supported(q.type.shape, k.type.shape, v.type.shape, dt):
            return False
        inside = set([cast_p, exp, sub, red, widen, qk, kt, op] + found[1] + score_ops)
        for x in inside - {op}:
            if any(u.op not in inside and not _dead(u.op) for r in x.results for u in r.uses):
                return False  # an intermediate is used elsewhere: it has to exist
        return replace(rw, op, make(rw, DecodeAttentionOp, [q, k, v, pos], {"scale": c}))


DECODE_ATTENTION_PATTERNS = (DecodeAttentionToOp(),)
