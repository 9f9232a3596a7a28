"""Causal attention written with 16-bit matmuls (a decoder layer's form) becomes one
``tensor.causal_attention`` (lowered by lower/causal_attention.py, beyond 2048 keys by
lower/causal_attention_long.py: diagonal key blocks masked, blocks above the diagonal skipped,
K and V loaded once per KV head).

Matched, with every intermediate used only inside the pattern: ``O = cast(P, dt) @ V`` in the
16-bit dtype ``dt``, ``P = E · 1/ΣE`` (or ``E / ΣE``), ``E = exp(Y - max(Y))``, ``Y = cast(S,
f32)·c + causal mask`` (the constant canonical/masks.py makes of ``np.triu(full(m), 1)``),
``S = Q @ Kᵀ`` in ``dt``. Q, Kᵀ and V are taken as they reach the matmuls (any views); the
grouped form canonical/gqa.py leaves for ``np.repeat`` of the KV heads ((..., G, R) query heads
over (..., G, 1) KV heads) is flattened to the op's (..., G·R) over (..., G). Formed only when
lower/causal_attention_dispatch.py supports the shapes (and so only for masks <= -1e4, whose
blocks above the diagonal contribute nothing). The lowering keeps the scores in fp32 and normalises after
``P V`` (rounding ``exp`` rather than ``exp / Σ`` to ``dt``): within ``dt``'s tolerance of the
written program, closer to exact arithmetic.
"""

from __future__ import annotations

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.composites_causal_attention import CausalAttentionOp
from ..lower.causal_attention_dispatch import supported
from ..match import def_op, make, replace
from .attention import _dead, _normalised
from .grouped_attention import _masked_exp_argument, _op_shapes

_NARROW = {"bf16", "f16"}


def _widened(v, dt):
    """x when ``v`` is cast(x: dt -> f32), else None."""
    op = def_op(v, T.CastOp)
    if op is None or v.dtype.name != "f32" or op.operand(0).dtype is not dt:
        return None
    return op


class LayerAttentionToCausal(RewritePattern):
    """cast(softmax(cast(Q Kᵀ)·c + causal mask), dt) @ V in dt → causal_attention(Q, K, V)"""

    root = T.MatmulOp

    def match_and_rewrite(self, op, rw):
        dt = op.result.dtype
        pc = def_op(op.operand(0), T.CastOp)
        if dt.name not in _NARROW or pc is None or pc.operand(0).dtype.name != "f32":
            return False
        found = _normalised(pc.operand(0))
        exp = def_op(found[0], T.ExpOp) if found is not None else None
        scores = _masked_exp_argument(exp.operand(0)) if exp is not None else None
        if scores is None:
            return False
        s, c, _causal, mask, ops = scores
        widen = _widened(s, dt)
        qk = def_op(widen.operand(0), T.MatmulOp) if widen is not None else None
        if qk is None:
            return False
        q, kt, v = qk.operand(0), qk.operand(1), op.operand(1)
        if not (q.dtype is kt.dtype is v.dtype is dt):
            return False
        k_shape = kt.type.shape[:-2] + kt.type.shape[:-3:-1]
        shapes = _op_shapes(q.type.shape, k_shape, v.type.shape, True)
        if shapes is None or not supported(*shapes, dt, mask):
            return False
        inside = set(ops + found[1] + [exp, widen, qk, pc, op])
        for x in inside - {op}:
            if any(u.op not in inside and not _dead(u.op) for r in x.results for u in r.uses):
                return False  # an intermediate is used elsewhere: it has to exist
        rank = kt.type.rank
        k = make(rw, T.TransposeOp, [kt], {"perm": tuple(range(rank - 2)) + (rank - 1, rank - 2)})
        operands = [
            x if x.type.shape == shape else make(rw, T.ReshapeOp, [x], {"shape": shape})
            for x, shape in zip((q, k, v), shapes)
        ]
        out = make(rw, CausalAttentionOp, operands, {"scale": c, "mask_value": float(mask)})
        if out.type.shape != op.result.type.shape:
            out = make(rw, T.ReshapeOp, [out], {"shape": op.result.type.shape})
        return replace(rw, op, out)


CAUSAL_ATTENTION_PATTERNS = (LayerAttentionToCausal(),)
