"""One Qwen3 decoder layer (Qwen3-Embedding-8B shapes by default: hidden 4096, 32 query heads,
8 key/value heads, head dim 128, intermediate 12288): RMSNorm, q/k/v projections, per-head
q/k RMSNorm, RoPE (rotate-halves), causal grouped-query attention, output projection and
residual, RMSNorm, SwiGLU MLP and residual. Norms and softmax compute in fp32."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import bfloat16, float32, get_dtype
from ..tensor.builder import Builder
from .registry import Workload, register

EPS = 1e-6


def _rmsnorm(b: Builder, x, w, dt):
    xf = x.astype(float32)
    ms = b.mean(xf * xf, axis=-1, keepdims=True)
    return (xf / b.sqrt(ms + EPS) * w.astype(float32)).astype(dt)


def _rope(b: Builder, x, cos, sin):
    """x (heads, seq, d); cos / sin (seq, d/2) in fp32."""
    d = x.type.shape[-1]
    xf = x.astype(float32)
    lo, hi = xf[..., : d // 2], xf[..., d // 2 :]
    return b.concat([lo * cos - hi * sin, lo * sin + hi * cos], axis=-1)


def build_qwen3_layer(seq=128, hidden=4096, heads=32, kv_heads=8, head_dim=128, inter=12288, dtype=bfloat16):
    b = Builder("qwen3_layer")
    dt = get_dtype(dtype)
    group = heads // kv_heads
    x = b.add_input("x", (seq, hidden), dt)
    w_in = b.add_input("w_in_norm", (hidden,), dt)
    wq = b.add_input("wq", (hidden, heads * head_dim), dt)
    wk = b.add_input("wk", (hidden, kv_heads * head_dim), dt)
    wv = b.add_input("wv", (hidden, kv_heads * head_dim), dt)
    q_norm = b.add_input("q_norm", (head_dim,), dt)
    k_norm = b.add_input("k_norm", (head_dim,), dt)
    wo = b.add_input("wo", (heads * head_dim, hidden), dt)
    w_post = b.add_input("w_post_norm", (hidden,), dt)
    wg = b.add_input("w_gate", (hidden, inter), dt)
    wu = b.add_input("w_up", (hidden, inter), dt)
    wd = b.add_input("w_down", (inter, hidden), dt)
    cos = b.add_input("cos", (seq, head_dim // 2), float32)
    sin = b.add_input("sin", (seq, head_dim // 2), float32)

    h = _rmsnorm(b, x, w_in, dt)
    q = b.transpose(b.reshape(h @ wq, (seq, heads, head_dim)), (1, 0, 2))
    k = b.transpose(b.reshape(h @ wk, (seq, kv_heads, head_dim)), (1, 0, 2))
    v = b.transpose(b.reshape(h @ wv, (seq, kv_heads, head_dim)), (1, 0, 2))
    q = _rope(b, _rmsnorm(b, q, q_norm, dt), cos, sin).astype(dt)
    k = _rope(b, _rmsnorm(b, k, k_norm, dt), cos, sin).astype(dt)
    q = b.reshape(q, (kv_heads, group * seq, head_dim))  # query head = kv head * group + g
    s = (q @ b.transpose(k, (0, 2, 1))).astype(float32) * float(1 / np.sqrt(head_dim))
    s = b.reshape(s, (kv_heads, group, seq, seq))
    causal = b.iota((seq, seq), axis=1) <= b.iota((seq, seq), axis=0)
    s = b.where(causal, s, float("-inf"))
    e = b.exp(s - b.max(s, axis=-1, keepdims=True))
    p = (e / b.sum(e, axis=-1, keepdims=True)).astype(dt)
    o = b.reshape(p, (kv_heads, group * seq, seq)) @ v
    o = b.reshape(b.transpose(b.reshape(o, (heads, seq, head_dim)), (1, 0, 2)), (seq, heads * head_dim))
    x1 = x + o @ wo
    h2 = _rmsnorm(b, x1, w_post, dt)
    g = (h2 @ wg).astype(float32)
    act = (g / (1 + b.exp(-g)) * (h2 @ wu).astype(float32)).astype(dt)
    b.set_outputs({"y": x1 + act @ wd})
    return b.graph


def _rms64(x, w):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS) * w


def qwen3_layer_reference(
    x, w_in_norm, wq, wk, wv, q_norm, k_norm, wo, w_post_norm, w_gate, w_up, w_down, cos, sin
):
    """float64 NumPy, written from the model's definition (not from the graph)."""
    a = {k: np.asarray(v, np.float64) for k, v in locals().items()}
    x = a["x"]
    seq = x.shape[0]
    d = a["q_norm"].shape[0]
    heads, kv_heads = a["wq"].shape[1] // d, a["wk"].shape[1] // d
    h = _rms64(x, a["w_in_norm"])
    q = (h @ a["wq"]).reshape(seq, heads, d).transpose(1, 0, 2)
    k = (h @ a["wk"]).reshape(seq, kv_heads, d).transpose(1, 0, 2)
    v = (h @ a["wv"]).reshape(seq, kv_heads, d).transpose(1, 0, 2)

    def rope(t):
        lo, hi = t[..., : d // 2], t[..., d // 2 :]
        return np.concatenate([lo * a["cos"] - hi * a["sin"], lo * a["sin"] + hi * a["cos"]], -1)

    q = rope(_rms64(q, a["q_norm"]))
    k = np.repeat(rope(_rms64(k, a["k_norm"])), heads // kv_heads, axis=0)
    v = np.repeat(v, heads // kv_heads, axis=0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(1, 0, 2).reshape(seq, heads * d)
    x1 = x + o @ a["wo"]
    h2 = _rms64(x1, a["w_post_norm"])
    g = h2 @ a["w_gate"]
    return {"y": x1 + (g / (1 + np.exp(-g)) * (h2 @ a["w_up"])) @ a["w_down"]}


def model_input(name: str, shape, rng, unit_names=("x",)) -> np.ndarray:
    """One input at the scale of a trained model, by its name: RoPE tables ``cos``/``sin`` from
    the usual frequencies (base 1e6), norm weights near 1, unit-scale ``unit_names``
    (activations, caches), other weights ~ 1/sqrt(fan-in)."""
    if name in ("cos", "sin"):
        seq, half = shape
        inv = 1e6 ** (-np.arange(half) / half)
        ang = np.arange(seq)[:, None] * inv[None, :]
        return np.cos(ang) if name == "cos" else np.sin(ang)
    if "norm" in name:
        return 1 + 0.1 * rng.standard_normal(shape)
    if name in unit_names:
        return rng.standard_normal(shape)
    return rng.standard_normal(shape) / np.sqrt(shape[0])


def qwen3_inputs(graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs at the scale of a trained model (``model_input`` per input)."""
    rng = np.random.default_rng(seed)
    return {
        name: np.asarray(model_input(name, v.type.shape, rng)).astype(v.type.dtype.np_dtype)
        for name, v in zip(graph.input_names, graph.inputs)
    }


class _Qwen3Workload(Workload):
    def inputs(self, graph, seed: int = 0) -> dict[str, np.ndarray]:
        return qwen3_inputs(graph, seed)


QWEN3_LAYER = register(
    _Qwen3Workload(
        "qwen3_layer",
        build_qwen3_layer,
        qwen3_layer_reference,
        {"seq": 128, "hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "inter": 12288},
        "Qwen3 decoder layer (Qwen3-Embedding-8B shapes), bf16",
    )
)
