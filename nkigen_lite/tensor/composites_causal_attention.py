"""``tensor.causal_attention``: causal (grouped-query) attention as a decoder layer writes it in
16-bit: scores ``q @ kᵀ`` rounded to q's dtype, scaled and masked in fp32, an fp32 softmax whose
probabilities are rounded to q's dtype before ``p @ v``, the result in q's dtype.

q is (..., H, M, D), k (..., G, N, D), v (..., G, N, Dv), M == N, H a multiple of G: query head
h reads KV head h // (H / G) (``np.repeat(k, H // G, axis=-3)``); the leading dims are equal.
``mask_value`` is added to the scores of keys after the query (``np.triu(full(mask_value), 1)``).
canonical/causal_attention.py forms the op from attention written out with 16-bit matmuls;
lower/causal_attention.py lowers it block by block, masking only the diagonal key blocks and
skipping the blocks above the diagonal (beyond 2048 keys lower/causal_attention_long.py, with an
online softmax over key blocks)."""

from __future__ import annotations

import numpy as np

from .ops.composite import define_op


def _causal_attention(q, k, v, scale=1.0, mask_value=-1e4):
    """The layer's causal attention (module docstring); float64 operands stay float64."""
    work = np.float64 if q.dtype == np.float64 else np.float32
    rep = q.shape[-3] // k.shape[-3]
    kk, vv = np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)
    s = (q @ np.swapaxes(kk, -1, -2)).astype(work) * work(scale)  # the product in q's dtype
    n = s.shape[-1]
    s = s + np.triu(np.full((n, n), mask_value, work), 1)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(q.dtype) @ vv


CausalAttentionOp = define_op(
    "causal_attention",
    _causal_attention,
    numpy=(
        "(softmax((q @ swapaxes(repeat(k), -1, -2)).astype(q.dtype) * scale + triu(mask_value, 1))"
        ".astype(q.dtype) @ repeat(v)).astype(q.dtype), softmax in fp32"
    ),
)
