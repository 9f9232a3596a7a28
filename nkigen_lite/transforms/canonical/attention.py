"""Attention over many keys becomes ``tensor.flash_attention`` (an online softmax over key
blocks, lower/flash_attention.py).

``softmax(c · Q Kᵀ) V`` written out — ``S = Q @ Kᵀ``, ``Y = S·c`` (or S), ``E = exp(Y - max(Y))``
(or the folded ``exp(S·c + max(S)·(-c))`` of softmax_scale.py), ``P = E · 1/Σ E`` (or
``E / Σ E``), ``O = P @ V`` — with reductions over the last axis and every intermediate used only
inside the pattern is one ``tensor.flash_attention(Q, K, V, scale=c)`` when the keys are more
than ``MIN_KEYS`` (a row of fp32 scores would take more than 16 KiB of a partition: fused as
separate groups, the scores or K and V would go through HBM per query block) and the kernel
supports the shapes (f32, head dim <= 128, value dim <= 512, equal batch dims). Between 512
and 4096 keys the row pipeline keeps everything on chip. At most 512 keys with 2–16 query tiles
(``short_supported``) form the op too: its lowering is then a software pipeline over the query
tiles (lower/attention_pipelined.py) where the row pipeline ran each tile's chain after the
previous one. The op computes the same function; its lowerings round differently (running max
and rescaled sums; the scale applied to Q), within f32 tolerance.
"""

from __future__ import annotations

import math

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.composites_attention import FlashAttentionOp
from ..lower.attention_pipelined import short_supported
from ..lower.flash_attention import supported
from ..match import def_op, make, replace, splat_value

MIN_KEYS = 4096


def _last_axis_reduce(v, kind: str, of):
    op = def_op(v, T.ReduceOp)
    if op is None or op.attrs["kind"] != kind or not op.attrs["keepdims"] or op.operand(0) is not of:
        return None
    rank = of.type.rank
    return op if tuple(a % rank for a in op.attrs["axes"]) == (rank - 1,) else None


def _scale(v):
    """(x, c) when ``v`` is x * c or c * x with c a positive finite splat, else (v, 1.0)."""
    op = def_op(v, T.MulOp)
    if op is not None:
        for x, c in (op.operands, reversed(op.operands)):
            k = splat_value(c)
            if isinstance(k, (int, float)) and not isinstance(k, bool) and math.isfinite(k) and k > 0:
                if x.type == v.type:
                    return x, float(k), op
    return v, 1.0, None


def _exp_argument(x):
    """(S, c, ops) when ``x`` is Y - max(Y) with Y = S·c (or S), or S·c + max(S)·(-c)."""
    sub = def_op(x, T.SubOp)
    if sub is not None:
        y, mx = sub.operands
        red = _last_axis_reduce(mx, "max", y)
        if red is None:
            return None
        s, c, mul = _scale(y)
        return s, c, [sub, red] + ([mul] if mul else [])
    add = def_op(x, T.AddOp)
    if add is None:
        return None
    for a, bias in (add.operands, reversed(add.operands)):
        s, c, mul = _scale(a)
        bm = def_op(bias, T.MulOp)
        if mul is None or bm is None:
            continue
        for mx, nc in (bm.operands, reversed(bm.operands)):
            red = _last_axis_reduce(mx, "max", s)
            if red is not None and splat_value(nc) == -c:
                return s, c, [add, mul, bm, red]
    return None


def _normalised(p):
    """(E, ops) when ``p`` is E · reciprocal(Σ E) or E / Σ E (sums over the last axis)."""
    op = def_op(p, (T.MulOp, T.DivOp))
    if op is None:
        return None
    pairs = [op.operands] if isinstance(op, T.DivOp) else [op.operands, list(reversed(op.operands))]
    for e, den in pairs:
        if isinstance(op, T.MulOp):
            rec = def_op(den, T.ReciprocalOp)
            if rec is None:
                continue
            red = _last_axis_reduce(rec.operand(0), "sum", e)
            if red is not None:
                return e, [op, rec, red]
        else:
            red = _last_axis_reduce(den, "sum", e)
            if red is not None:
                return e, [op, red]
    return None


def _dead(op, depth: int = 6) -> bool:
    """True when nothing live reads ``op``'s results (ops a rewrite left for DCE), looking
    ``depth`` uses deep."""
    if depth == 0 or not op.results:
        return False
    return all(_dead(u.op, depth - 1) for r in op.results for u in r.uses)


class LongAttentionToFlash(RewritePattern):
    """softmax(c · Q Kᵀ) V over more than MIN_KEYS keys → flash_attention(Q, K, V, scale=c)"""

    root = T.MatmulOp

    def match_and_rewrite(self, op, rw):
        p, v = op.operands
        found = _normalised(p)
        if found is None:
            return False
        e, norm_ops = found
        exp = def_op(e, T.ExpOp)
        if exp is None:
            return False
        arg = _exp_argument(exp.operand(0))
        if arg is None:
            return False
        s, c, arg_ops = arg
        qk = def_op(s, T.MatmulOp)
        kt = def_op(qk.operand(1), T.TransposeOp) if qk is not None else None
        if kt is None:
            return False
        rank = kt.result.type.rank
        if tuple(kt.attrs["perm"]) != tuple(range(rank - 2)) + (rank - 1, rank - 2):
            return False
        q, k = qk.operand(0), kt.operand(0)
        long = k.type.shape[-2] > MIN_KEYS and supported(q.type, k.type, v.type)
        if not (long or short_supported(q.type, k.type, v.type, supported)):
            return False
        inside = set(norm_ops + arg_ops + [exp, qk, kt, op])
        for x in inside - {op}:
            if any(u.op not in inside and not _dead(u.op) for u in x.result.uses):
                return False  # an intermediate is used elsewhere: it has to exist
        return replace(rw, op, make(rw, FlashAttentionOp, [q, k, v], {"scale": c}))


ATTENTION_PATTERNS = (LongAttentionToFlash(),)
