"""``tensor.sink_attention``: causal grouped-query attention with a learned sink logit per query
head (gpt-oss), optionally within a sliding window.

q is (H, M, D), k (G, N, D), v (G, N, Dv) with H a multiple of G and M == N: query head h reads
KV head h // (H / G). ``sinks`` (H,) holds one logit per query head that joins the softmax's
max and denominator but has no value row: ``softmax([scale · q kᵀ, sink])[..., :N] @ v``. Key j
is visible to query i when ``j <= i`` and, with ``window > 0``, ``j > i - window``; the others
get probability 0. Computed in fp32 (float64 for float64 operands), the result cast to q's
dtype. canonical/sink_attention.py forms the op from the model's graph; lower/sink_attention.py
lowers it as one kernel."""

from __future__ import annotations

import numpy as np

from .ops.composite import define_op


def _sink_attention(q, k, v, sinks, scale=1.0, window=0):
    """softmax over [scale * q @ kᵀ (causal, window), sink] without the sink column, @ v, in fp32,
    cast to q's dtype; each KV head serves q.shape[0] // k.shape[0] consecutive query heads."""
    work = np.float64 if q.dtype == np.float64 else np.float32
    rep = q.shape[-3] // k.shape[-3]
    qf, kf, vf = (a.astype(work) for a in (q, np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)))
    s = (qf @ np.swapaxes(kf, -1, -2)) * work(scale)
    i, j = np.arange(s.shape[-2])[:, None], np.arange(s.shape[-1])[None, :]
    visible = j <= i
    if window > 0:
        visible &= j > i - window
    s = np.where(visible, s, -np.inf)
    sink = sinks.astype(work).reshape(-1, 1, 1)
    m = np.maximum(s.max(axis=-1, keepdims=True), sink)
    e = np.exp(s - m)
    return ((e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - m))) @ vf).astype(q.dtype)


SinkAttentionOp = define_op(
    "sink_attention",
    _sink_attention,
    numpy=(
        "(softmax(concat([where(causal & window, scale * q @ swapaxes(repeat(k), -1, -2), -inf), "
        "sinks], -1))[..., :N] @ repeat(v)).astype(q.dtype), fp32 inside"
    ),
)
