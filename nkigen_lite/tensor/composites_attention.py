"""``tensor.flash_attention``: softmax(scale · q kᵀ) v as one op, for keys too many to keep a
score row on chip (canonical/attention.py forms it; lower/flash_attention.py lowers it with an
online softmax over key blocks)."""

from __future__ import annotations

import numpy as np

from .ops.composite import define_op


def _flash_attention(q, k, v, scale=1.0):
    """softmax(scale * q @ kᵀ) @ v, the softmax over the keys (q: (..., M, D), k: (..., N, D),
    v: (..., N, Dv))."""
    work = np.float64 if q.dtype == np.float64 else np.float32
    qf, kf, vf = (a.astype(work) for a in (q, k, v))
    s = (qf @ np.swapaxes(kf, -1, -2)) * scale
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)) @ vf).astype(q.dtype)


FlashAttentionOp = define_op(
    "flash_attention",
    _flash_attention,
    numpy="softmax(scale * q @ swapaxes(k, -1, -2), axis=-1) @ v",
)
