"""Single-head attention softmax(Q Kᵀ / sqrt(d)) V, and RoPE (rotate-halves form)."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import float32, get_dtype
from ..tensor.builder import Builder
from .registry import Workload, register


def build_attention(seq=128, d=64, dtype=float32):
    b = Builder("attention")
    dt = get_dtype(dtype)
    q = b.add_input("q", (seq, d), dt)
    k = b.add_input("k", (seq, d), dt)
    v = b.add_input("v", (seq, d), dt)
    s = (q @ k.T) / float(np.sqrt(d))
    e = b.exp(s - b.max(s, axis=-1, keepdims=True))
    p = e / b.sum(e, axis=-1, keepdims=True)
    b.set_outputs({"o": p @ v})
    return b.graph


def attention_reference(q, k, v):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return {"o": (e / e.sum(axis=-1, keepdims=True)) @ v}


def build_rope(batch=1, seq=128, heads=16, d=128, dtype=float32):
    b = Builder("rope")
    dt = get_dtype(dtype)
    q = b.add_input("q", (batch, seq, heads, d), dt)
    cos = b.add_input("cos", (seq, d // 2), dt)
    sin = b.add_input("sin", (seq, d // 2), dt)
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    lo, hi = q[..., : d // 2], q[..., d // 2 :]
    b.set_outputs({"y": b.concat([lo * c - hi * s, lo * s + hi * c], axis=-1)})
    return b.graph


def rope_reference(q, cos, sin):
    q, cos, sin = (np.asarray(a, np.float64) for a in (q, cos, sin))
    h = q.shape[-1] // 2
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    lo, hi = q[..., :h], q[..., h:]
    return {"y": np.concatenate([lo * c - hi * s, lo * s + hi * c], axis=-1)}


ATTENTION = register(
    Workload(
        "attention",
        build_attention,
        attention_reference,
        {"seq": 128, "d": 64},
        "single-head softmax(QKᵀ/√d)·V",
    )
)
ROPE = register(
    Workload(
        "rope",
        build_rope,
        rope_reference,
        {"batch": 1, "seq": 128, "heads": 16, "d": 128},
        "rotary embedding, rotate-halves form",
    )
)
