"""One Qwen3-0.6B decode step: a single token at a runtime position ``pos`` (a 0-d int32
input) through one decoder layer, appending its key and value to bf16 K/V caches in place.

Shapes (Qwen3-0.6B): hidden 1024, 16 query heads and 8 key/value heads (2 query heads per kv
head), head dim 128, intermediate 3072, caches (8, 4096, 128) bf16, RoPE tables (4096, 64)
fp32 (base 1e6). Steps: RMSNorm, q/k/v projections, per-head q/k RMSNorm, RoPE with the
``cos`` / ``sin`` rows at ``pos`` (``dynamic_slice``), ``k`` and ``v`` written into row
``pos`` of the caches (``dynamic_update_slice``; the outputs ``k_cache_out`` / ``v_cache_out``
alias ``k_cache`` / ``v_cache``), attention of the token over the updated cache with the
causal mask ``iota <= pos`` computed on chip, grouped-query attention as a batched matmul of
the 2 query heads of a kv head against that head's cache (no repeated K/V), output projection,
residual, RMSNorm, SwiGLU MLP, residual. Norms and softmax compute in fp32.

**Minimum HBM traffic** (``decode_min_hbm_bytes``), the bytes any kernel computing this step
with static shapes must move:

- every weight once: ``w_in_norm``, ``wq``, ``wk``, ``wv``, ``q_norm``, ``k_norm``, ``wo``,
  ``w_post_norm``, ``w_gate``, ``w_up``, ``w_down`` (30 MiB + 8 KiB in bf16);
- the cache rows attention reads: all ``max_seq`` rows of both caches (the trip counts are
  static, so the rows past ``pos`` are read and masked; 2 × 8 MiB);
- the one row written per kv head and cache: ``2 × kv_heads × head_dim`` elements (4 KiB);
- activations: ``x`` in, ``y`` out, ``pos``, and the one row of ``cos`` and of ``sin`` RoPE
  uses (2 × 256 B), not the tables.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import bfloat16, float32, get_dtype, int32
from ..tensor.builder import Builder
from .qwen3 import EPS, _rmsnorm, model_input
from .registry import Workload, register

WEIGHTS = (
    "w_in_norm",
    "wq",
    "wk",
    "wv",
    "q_norm",
    "k_norm",
    "wo",
    "w_post_norm",
    "w_gate",
    "w_up",
    "w_down",
)


def build_qwen3_decode(
    hidden=1024, heads=16, kv_heads=8, head_dim=128, inter=3072, max_seq=4096, dtype=bfloat16
):
    b = Builder("qwen3_decode")
    dt = get_dtype(dtype)
    group = heads // kv_heads
    half = head_dim // 2
    x = b.add_input("x", (1, hidden), dt)
    pos = b.add_input("pos", (), int32)
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
    cos_t = b.add_input("cos", (max_seq, half), float32)
    sin_t = b.add_input("sin", (max_seq, half), float32)
    k_cache = b.add_input("k_cache", (kv_heads, max_seq, head_dim), dt)
    v_cache = b.add_input("v_cache", (kv_heads, max_seq, head_dim), dt)

    cos = b.dynamic_slice(cos_t, [pos, 0], [1, half])  # (1, half): the row at pos
    sin = b.dynamic_slice(sin_t, [pos, 0], [1, half])

    def rope(t):  # t (n, head_dim) fp32
        lo, hi = t[:, :half], t[:, half:]
        return b.concat([lo * cos - hi * sin, lo * sin + hi * cos], axis=-1)

    h = _rmsnorm(b, x, w_in, dt)  # (1, hidden)
    q = b.reshape(h @ wq, (heads, head_dim))
    k = b.reshape(h @ wk, (kv_heads, head_dim))
    v = b.reshape(h @ wv, (kv_heads, head_dim))
    q = rope(_rmsnorm(b, q, q_norm, dt).astype(float32)).astype(dt)
    k = rope(_rmsnorm(b, k, k_norm, dt).astype(float32)).astype(dt)
    k_new = b.dynamic_update_slice(k_cache, b.reshape(k, (kv_heads, 1, head_dim)), [0, pos, 0])
    v_new = b.dynamic_update_slice(v_cache, b.reshape(v, (kv_heads, 1, head_dim)), [0, pos, 0])

    qg = b.reshape(q, (kv_heads, group, head_dim))  # query head = kv head * group + g
    s = (qg @ b.transpose(k_new, (0, 2, 1))).astype(float32) * float(1 / np.sqrt(head_dim))
    visible = b.iota((kv_heads, group, max_seq), axis=2) <= pos  # (kv_heads, group, max_seq)
    s = b.where(visible, s, float("-inf"))
    e = b.exp(s - b.max(s, axis=-1, keepdims=True))
    p = (e / b.sum(e, axis=-1, keepdims=True)).astype(dt)
    o = b.reshape(p @ v_new, (1, heads * head_dim))
    x1 = x + o @ wo
    h2 = _rmsnorm(b, x1, w_post, dt)
    g = (h2 @ wg).astype(float32)
    act = (g / (1 + b.exp(-g)) * (h2 @ wu).astype(float32)).astype(dt)
    b.set_outputs(
        {"y": x1 + act @ wd, "k_cache_out": k_new, "v_cache_out": v_new},
        aliases={"k_cache_out": "k_cache", "v_cache_out": "v_cache"},
    )
    return b.graph


def _rms64(x, w):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS) * w


def qwen3_decode_reference(
    x,
    pos,
    w_in_norm,
    wq,
    wk,
    wv,
    q_norm,
    k_norm,
    wo,
    w_post_norm,
    w_gate,
    w_up,
    w_down,
    cos,
    sin,
    k_cache,
    v_cache,
):
    """float64 NumPy, written from the model's definition (not from the graph): the caches
    are updated at row ``pos``, the query attends over rows ``0..pos`` with K/V repeated per
    query head as the model states it."""
    p = int(np.asarray(pos))
    a = {k: np.asarray(v, np.float64) for k, v in locals().items() if k not in ("pos", "p")}
    d = a["q_norm"].shape[0]
    heads, kv_heads = a["wq"].shape[1] // d, a["wk"].shape[1] // d
    h = _rms64(a["x"], a["w_in_norm"])
    q = (h @ a["wq"]).reshape(heads, d)
    k = (h @ a["wk"]).reshape(kv_heads, d)
    v = (h @ a["wv"]).reshape(kv_heads, d)
    c, s = a["cos"][p], a["sin"][p]

    def rope(t):
        lo, hi = t[:, : d // 2], t[:, d // 2 :]
        return np.concatenate([lo * c - hi * s, lo * s + hi * c], -1)

    q, k = rope(_rms64(q, a["q_norm"])), rope(_rms64(k, a["k_norm"]))
    kc, vc = a["k_cache"].copy(), a["v_cache"].copy()
    kc[:, p], vc[:, p] = k, v
    kr = np.repeat(kc[:, : p + 1], heads // kv_heads, axis=0)  # (heads, p+1, d)
    vr = np.repeat(vc[:, : p + 1], heads // kv_heads, axis=0)
    sc = np.einsum("hd,htd->ht", q, kr) / np.sqrt(d)
    w = np.exp(sc - sc.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    o = np.einsum("ht,htd->hd", w, vr).reshape(1, heads * d)
    x1 = a["x"] + o @ a["wo"]
    h2 = _rms64(x1, a["w_post_norm"])
    g = h2 @ a["w_gate"]
    y = x1 + (g / (1 + np.exp(-g)) * (h2 @ a["w_up"])) @ a["w_down"]
    return {"y": y, "k_cache_out": kc, "v_cache_out": vc}


def decode_min_hbm_bytes(graph) -> int:
    """The minimum HBM traffic of the module docstring, from the graph's input types."""
    t = {n: v.type for n, v in zip(graph.input_names, graph.inputs)}

    def nbytes(name):
        return t[name].size * t[name].dtype.itemsize

    kv_heads, _, head_dim = t["k_cache"].shape
    row = kv_heads * head_dim * t["k_cache"].dtype.itemsize
    cos_row = t["cos"].shape[1] * t["cos"].dtype.itemsize
    y = graph.outputs["y"].type
    return (
        sum(nbytes(w) for w in WEIGHTS)
        + nbytes("k_cache")
        + nbytes("v_cache")
        + 2 * row
        + nbytes("x")
        + y.size * y.dtype.itemsize
        + nbytes("pos")
        + 2 * cos_row
    )


def decode_inputs(graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Model-scale inputs: unit activations, weights ~ 1/sqrt(fan-in), norm weights near 1,
    RoPE tables from base 1e6, caches of unit-scale keys and values (every row filled, so a
    wrong mask shows), ``pos`` drawn from the cache's upper half."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, v in zip(graph.input_names, graph.inputs):
        shape, npdt = v.type.shape, v.type.dtype.np_dtype
        if name == "pos":
            max_seq = graph.inputs[graph.input_names.index("k_cache")].type.shape[1]
            a = rng.integers(max_seq // 2, max_seq)
        else:
            a = model_input(name, shape, rng, unit_names=("x", "k_cache", "v_cache"))
        out[name] = np.asarray(a).astype(npdt)
    return out


class _DecodeWorkload(Workload):
    def inputs(self, graph, seed: int = 0) -> dict[str, np.ndarray]:
        return decode_inputs(graph, seed)


QWEN3_DECODE = register(
    _DecodeWorkload(
        "qwen3_decode",
        build_qwen3_decode,
        qwen3_decode_reference,
        {"hidden": 1024, "heads": 16, "kv_heads": 8, "head_dim": 128, "inter": 3072, "max_seq": 4096},
        "Qwen3-0.6B decode step at a runtime position: in-place K/V append, causal GQA over the cache",
    )
)
