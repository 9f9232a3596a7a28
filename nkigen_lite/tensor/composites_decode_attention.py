"""``tensor.decode_attention``: one decode step's attention over a KV cache at a runtime position.

q is (G, R, D) (R query heads per KV head, GQA), k (G, N, D) and v (G, N, Dv) the caches, pos a
0-d int32: key j is visible when ``j <= pos``. As a decoder writes it: the scores ``q @ kᵀ`` are
rounded to q's dtype, then ``· scale`` in fp32, masked with ``-inf``, softmaxed in fp32, the
probabilities rounded to q's dtype, and ``p @ v`` (fp32 accumulation) rounded to q's dtype.
canonical/decode_attention.py forms the op from that program; lower/decode_attention.py lowers
it with each cache read once in large DMAs and the scores never leaving the chip."""

from __future__ import annotations

import numpy as np

from .ops.composite import define_op


def _decode_attention(q, k, v, pos, scale=1.0):
    """softmax over the keys ``j <= pos`` of ``scale * round(q @ kᵀ)``, rounded, ``@ v``."""
    f32 = np.float32
    s = (q.astype(f32) @ np.swapaxes(k.astype(f32), -1, -2)).astype(q.dtype).astype(f32) * f32(scale)
    visible = np.arange(k.shape[-2], dtype=np.int32) <= pos
    s = np.where(visible, s, f32(-np.inf))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = (e / e.sum(axis=-1, keepdims=True)).astype(q.dtype)
    return (p.astype(f32) @ v.astype(f32)).astype(q.dtype)


DecodeAttentionOp = define_op(
    "decode_attention",
    _decode_attention,
    numpy=(
        "(softmax(where(arange(N) <= pos, round(q @ swapaxes(k, -1, -2)) * scale, -inf), axis=-1)"
        ".astype(q.dtype) @ v).astype(q.dtype)"
    ),
)
