"""``tensor.grouped_attention``: softmax(scale · q kᵀ + causal mask) v for every query head, the
key / value heads shared by groups of query heads (GQA).

q is (..., H, M, D), k (..., G, N, D), v (..., G, N, Dv) with H a multiple of G: query head h
reads KV head h // (H / G) (``np.repeat(k, H // G, axis=-3)``); the leading dims are equal. The
scores, softmax and ``p @ v`` are computed in fp32 (float64 for float64 operands) and the result
is cast to q's dtype. With ``causal``, ``mask_value`` is added to the scores of keys after the
query (``np.triu(full(mask_value), 1)``, M == N). canonical/grouped_attention.py forms the op
from attention written out; lower/grouped_attention.py lowers it with every head's K and V
loaded once and the DMAs batched across heads."""

from __future__ import annotations

import numpy as np

from .ops.composite import define_op


def _grouped_attention(q, k, v, scale=1.0, causal=False, mask_value=0.0):
    """softmax(scale * q @ kᵀ (+ mask_value above the diagonal when causal)) @ v in fp32, cast to
    q's dtype; each KV head serves q.shape[-3] // k.shape[-3] consecutive query heads."""
    work = np.float64 if q.dtype == np.float64 else np.float32
    rep = q.shape[-3] // k.shape[-3]
    qf, kf, vf = (a.astype(work) for a in (q, np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)))
    s = (qf @ np.swapaxes(kf, -1, -2)) * scale
    if causal:
        n = s.shape[-1]
        s = s + np.triu(np.full((n, n), mask_value, work), 1)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)) @ vf).astype(q.dtype)


GroupedAttentionOp = define_op(
    "grouped_attention",
    _grouped_attention,
    numpy=(
        "(softmax(scale * q @ swapaxes(repeat(k), -1, -2) + causal mask, axis=-1) @ repeat(v))"
        ".astype(q.dtype), fp32 inside"
    ),
)
