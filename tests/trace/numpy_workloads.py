"""Model building blocks written as plain NumPy functions, the way NKIPy users write them
(/work/shared/reference/nkipy_ops_and_workloads.md §4). Nothing here imports nkigen_lite: the
same functions run on NumPy arrays (the reference) and on traced arrays (the graph)."""

import numpy as np


def rmsnorm(x, w, eps=1e-6):
    xf = x.astype(np.float32)
    wf = w.astype(np.float32)
    ms = (xf * xf).mean(axis=-1, keepdims=True)
    return (xf / np.sqrt(ms + eps) * wf).astype(x.dtype)


def layernorm(x, w, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def rope(q, k, cos, sin):
    """Rotate-halves RoPE: q (B,S,Hq,D), k (B,S,Hk,D), cos / sin (S, D/2)."""
    d = q.shape[-1]
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]

    def rot(t):
        lo, hi = t[..., : d // 2], t[..., d // 2 :]
        return np.concatenate([lo * c - hi * s, lo * s + hi * c], axis=-1)

    return rot(q), rot(k)


def silu(x):
    return x * (1 / (1 + np.exp(-x)))


def swiglu_mlp(x, w_gu, w_dn):
    """x (T, D) @ w_gu (D, 2F) -> split gate / up -> silu(g) * u -> @ w_dn (F, D)."""
    g, u = np.split(x @ w_gu, 2, axis=-1)
    return (silu(g) * u) @ w_dn


def clamped_swiglu(g, u, alpha=1.702, lim=7.0):
    g = np.minimum(g, lim)
    u = np.clip(u, -lim, lim)
    return (u + 1.0) * (g * (1 / (1 + np.exp(-alpha * g))))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def attention(q, k, v):
    """Causal multi-head attention: q, k, v (H, S, D)."""
    s = (q @ k.transpose(0, 2, 1)) / np.sqrt(q.shape[-1])
    n = s.shape[-1]
    s = s + np.triu(np.full((n, n), -1e4), 1)[None]
    return softmax(s) @ v


def gqa_attention_layer(x, w_qkv, w_o, heads=4, kv_heads=2):
    """x (S, D) -> qkv projection, grouped-query causal attention with np.repeat, o-proj."""
    seq, dim = x.shape
    hd = dim // heads
    q, k, v = np.split(x @ w_qkv, [heads * hd, (heads + kv_heads) * hd], axis=-1)
    q = q.reshape(seq, heads, hd).transpose(1, 0, 2)
    k = np.repeat(k.reshape(seq, kv_heads, hd), heads // kv_heads, axis=1).transpose(1, 0, 2)
    v = np.repeat(v.reshape(seq, kv_heads, hd), heads // kv_heads, axis=1).transpose(1, 0, 2)
    o = attention(q, k, v)
    return o.transpose(1, 0, 2).reshape(seq, dim) @ w_o + x


def qwen3_layer(h, w_in, w_qkv, w_o, w_qn, w_kn, cos, sin, w_post, w_gu, w_dn, heads=4, kv_heads=2):
    """A Qwen3-style decoder layer (§4.2) at small sizes: h (1, S, D), head_dim = D // heads."""
    _, seq, dim = h.shape
    hd = dim // heads
    x = rmsnorm(h, w_in)
    q, k, v = np.split(x @ w_qkv, [heads * hd, (heads + kv_heads) * hd], axis=-1)
    q = rmsnorm(q.reshape(1, seq, heads, hd), w_qn)
    k = rmsnorm(k.reshape(1, seq, kv_heads, hd), w_kn)
    v = v.reshape(1, seq, kv_heads, hd)
    q, k = rope(q, k, cos, sin)
    k = np.repeat(k, heads // kv_heads, axis=2)
    v = np.repeat(v, heads // kv_heads, axis=2)
    q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    s = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(hd)
    s = s + np.triu(np.full((seq, seq), -1e4), 1)[None, None]
    p = softmax(s.astype(np.float32)).astype(h.dtype)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(1, seq, heads * hd) @ w_o + h
    x = rmsnorm(o, w_post)
    g, u = np.split(x @ w_gu, 2, axis=-1)
    return (silu(g) * u) @ w_dn + o
