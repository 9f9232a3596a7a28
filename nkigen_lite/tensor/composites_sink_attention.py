"""``tensor.sink_attention``: causal grouped-query attention with a learned sink logit per query
head (gpt-oss), optionally within a sliding window.

q is (H, M, D), k (G, N, D), v (G, N, Dv) with H a multiple of G and M == N: query head h reads
KV head h // (H / G). ``sinks`` (H,) holds one logit per query head that joins the softmax's
max and denominator but has no value row: ``softmax([scale · q kᵀ, sink])[..., :N] @ v``. Key j
is visible to query i when ``j <= i`` and, with ``window > 0``, ``j > i - window``; the others
get probability 0. Computed in fp32 (float64 for float64 operands), the result cast to q's
dtype; with ``rounded`` the scores and the probabilities are rounded to q's dtype first, as a
graph with bf16 matmuls does (the kernel keeps the scores in fp32 and rounds P).
canonical/sink_attention.py forms the op from the model's graph; lower/sink_attention.py lowers
it as one kernel."""

from __future__ import annotations

import numpy as np

from .ops.composite import define_op


def _sink_attention(q, k, v, sinks, scale=1.0, window=0, rounded=False):
    """softmax over [scale * q @ kᵀ (causal, window), sink] without the sink column, @ v, in fp32,
    cast to q's dtype; each KV head serves q.shape[0] // k.shape[0] consecutive query heads;
    ``rounded``: the scores q @ kᵀ and the probabilities are rounded to q's dtype (a bf16 graph)."""
    work = np.float64 if q.dtype == np.float64 else np.float32
    rep = q.shape[-3] // k.shape[-3]
    kr, vr = np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)
    if rounded:  # the products in q's dtype, as the graph's bf16 matmuls
        s = (q @ np.swapaxes(kr, -1, -2)).astype(work)
    else:
        s = q.astype(work) @ np.swapaxes(kr.astype(work), -1, -2)
    s = s * work(scale)
    i, j = np.arange(s.shape[-2])[:, None], np.arange(s.shape[-1])[None, :]
    visible = j <= i
    if window > 0:
        visible &= j > i - window
    s = np.where(visible, s, -np.inf)
    sink = sinks.astype(work).reshape(-1, 1, 1)
    m = np.maximum(s.max(axis=-1, keepdims=True), sink)
    e = np.exp(s - m)
    p = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - m))
    if rounded:
        return (p.astype(q.dtype) @ vr).astype(q.dtype)
    return (p @ vr.astype(work)).astype(q.dtype)


SinkAttentionOp = define_op(
    "sink_attention",
    _sink_attention,
    numpy=(
        "(softmax(concat([where(causal & window, scale * q @ swapaxes(repeat(k), -1, -2), -inf), "
        "sinks], -1))[..., :N] @ repeat(v)).astype(q.dtype), fp32 inside"
    ),
)
