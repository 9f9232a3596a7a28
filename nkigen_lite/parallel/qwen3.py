"""The Qwen3-0.6B decoder layer as a tensor graph, its float64 NumPy reference, and its
tensor-parallel plans (attention heads and MLP sharded, Megatron style).

Qwen3-0.6B: hidden 1024, 16 query heads and 8 KV heads of dim 128 (GQA), per-head RMSNorm of q
and k, rotary embedding (rotate-halves), SwiGLU MLP with intermediate 3072. The graph takes one
sequence ``h`` (seq, hidden); the causal mask is a constant. The KV heads are repeated with
kv head g ahead of its query heads, so sharding the heads (column-parallel Q/K/V) gives every rank
its query heads together with the KV heads they read.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import float32, get_dtype
from ..tensor.builder import Builder

QWEN3_0_6B = {"hidden": 1024, "heads": 16, "kv_heads": 8, "head_dim": 128, "inter": 3072}
EPS = 1e-6
MASK_VALUE = -1e4

PARAMS = ("w_in", "w_q", "w_k", "w_v", "w_qn", "w_kn", "w_o", "w_post", "w_gate", "w_up", "w_down")


def _shapes(seq, hidden, heads, kv_heads, head_dim, inter):
    return {
        "h": (seq, hidden),
        "cos": (seq, head_dim // 2),
        "sin": (seq, head_dim // 2),
        "w_in": (hidden,),
        "w_q": (hidden, heads * head_dim),
        "w_k": (hidden, kv_heads * head_dim),
        "w_v": (hidden, kv_heads * head_dim),
        "w_qn": (head_dim,),
        "w_kn": (head_dim,),
        "w_o": (heads * head_dim, hidden),
        "w_post": (hidden,),
        "w_gate": (hidden, inter),
        "w_up": (hidden, inter),
        "w_down": (inter, hidden),
    }


def _rmsnorm(b, x, w):
    """RMSNorm in fp32 (a 16-bit ``x`` is widened and the result rounded back, as the model
    runs it)."""
    xf, wf = b.cast(x, float32), b.cast(w, float32)
    return b.cast(xf / b.sqrt(b.mean(xf * xf, axis=-1, keepdims=True) + EPS) * wf, x.dtype)


def _rope(b, x, cos, sin):
    """Rotate-halves RoPE on the last axis; cos/sin already broadcastable to x's halves."""
    half = x.shape[-1] // 2
    lo, hi = x[..., :half], x[..., half:]
    return b.concat([lo * cos - hi * sin, lo * sin + hi * cos], axis=-1)


def causal_mask(seq):
    """The additive causal mask: -1e4 above the diagonal, 0 elsewhere (float32)."""
    return np.triu(np.full((seq, seq), MASK_VALUE, np.float32), 1)


def build_qwen3_layer(seq=16, dtype=float32, **dims):
    """The Qwen3 layer graph (default dims: Qwen3-0.6B); inputs named as in ``_shapes``.

    Written as the model runs it, which is the form the single-kernel layer paths recognise
    (docs/lowering.md): RMSNorms in fp32, q/k/v split into heads by reshapes, the KV heads
    repeated (``np.repeat`` as a broadcast), the scores widened to fp32 before the scale and the
    causal mask (a ``np.triu`` constant), the probabilities rounded back to ``dtype`` for
    ``P @ V``, and the heads merged by a transpose and a reshape. With ``dtype`` float32 every
    cast is the identity."""
    d = {**QWEN3_0_6B, **dims}
    hd, kv, heads = d["head_dim"], d["kv_heads"], d["heads"]
    rep = heads // kv
    dt = get_dtype(dtype)
    b = Builder("qwen3_layer")
    x = {n: b.add_input(n, s, dt) for n, s in _shapes(seq, **d).items()}
    h = x["h"]
    a = _rmsnorm(b, h, x["w_in"])
    q = _rmsnorm(b, (a @ x["w_q"]).reshape(seq, heads, hd), x["w_qn"])
    k = _rmsnorm(b, (a @ x["w_k"]).reshape(seq, kv, hd), x["w_kn"])
    v = (a @ x["w_v"]).reshape(seq, kv, hd)
    cos, sin = (x[n].reshape(seq, 1, hd // 2) for n in ("cos", "sin"))
    q, k = _rope(b, q, cos, sin), _rope(b, k, cos, sin)

    def repeat_kv(t):  # np.repeat(t, rep, axis=1): KV head g serves query heads g·rep … g·rep+rep-1
        return b.broadcast_to(t.reshape(seq, kv, 1, hd), (seq, kv, rep, hd)).reshape(seq, heads, hd)

    q, k, v = (b.transpose(t, (1, 0, 2)) for t in (q, repeat_kv(k), repeat_kv(v)))  # (heads, seq, hd)
    s = b.cast(q @ b.transpose(k, (0, 2, 1)), float32) / float(np.sqrt(hd)) + b.constant(causal_mask(seq))
    e = b.exp(s - b.max(s, axis=-1, keepdims=True))
    p = b.cast(e / b.sum(e, axis=-1, keepdims=True), dt)
    o = b.transpose(p @ v, (1, 0, 2)).reshape(seq, heads * hd)
    h2 = o @ x["w_o"] + h
    m = _rmsnorm(b, h2, x["w_post"])
    g = m @ x["w_gate"]
    act = g * (1.0 / (1.0 + b.exp(-g))) * (m @ x["w_up"])
    b.set_outputs({"y": act @ x["w_down"] + h2})
    return b.graph


def qwen3_inputs(seq=16, seed=0, **dims):
    """Random float32 inputs (weights scaled like a trained layer)."""
    d = {**QWEN3_0_6B, **dims}
    rng = np.random.default_rng(seed)
    out = {}
    for n, s in _shapes(seq, **d).items():
        scale = 1.0 / np.sqrt(s[0]) if len(s) == 2 and n.startswith("w_") else 1.0
        out[n] = (rng.standard_normal(s) * scale).astype(np.float32)
    for n in ("w_in", "w_qn", "w_kn", "w_post"):
        out[n] = rng.uniform(0.5, 1.5, out[n].shape).astype(np.float32)
    ang = np.arange(seq)[:, None] / 10000 ** (np.arange(d["head_dim"] // 2) / (d["head_dim"] // 2))
    out["cos"], out["sin"] = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    return out


def qwen3_reference(inputs, heads=16, kv_heads=8):
    """The layer in float64 NumPy, written the usual way (np.repeat of the KV heads)."""
    f = {n: np.asarray(a, np.float64) for n, a in inputs.items()}
    h = f["h"]
    seq, hd = h.shape[0], f["w_qn"].shape[0]

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * w

    def rope(x):
        c, s = f["cos"][:, None, :], f["sin"][:, None, :]
        lo, hi = x[..., : hd // 2], x[..., hd // 2 :]
        return np.concatenate([lo * c - hi * s, lo * s + hi * c], -1)

    a = rms(h, f["w_in"])
    q = rope(rms((a @ f["w_q"]).reshape(seq, heads, hd), f["w_qn"]))
    k = rope(rms((a @ f["w_k"]).reshape(seq, kv_heads, hd), f["w_kn"]))
    v = (a @ f["w_v"]).reshape(seq, kv_heads, hd)
    k, v = (np.repeat(t, heads // kv_heads, axis=1) for t in (k, v))
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd) + np.triu(np.full((seq, seq), -1e4), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("hqk,khd->qhd", p, v).reshape(seq, heads * hd)
    h2 = o @ f["w_o"] + h
    m = rms(h2, f["w_post"])
    g = m @ f["w_gate"]
    return {"y": (g / (1 + np.exp(-g)) * (m @ f["w_up"])) @ f["w_down"] + h2}


QWEN3_TP_PLAN = {
    "w_q": "column",
    "w_k": "column",
    "w_v": "column",  # attention: heads sharded
    "w_o": "row",  # -> partial sums, one all_reduce
    "w_gate": "column",
    "w_up": "column",  # MLP: intermediate sharded
    "w_down": "row",  # -> partial sums, one all_reduce
    "w_in": "replicated",
    "w_qn": "replicated",
    "w_kn": "replicated",
    "w_post": "replicated",
}
"""The Megatron plan for the layer: the same at every TP degree that divides the 8 KV heads
(TP = 2, 4, 8); activations (h, cos, sin) are replicated."""
