"""The Qwen3-30B-A3B mixture-of-experts block for a few tokens (hidden 2,048, 128 experts,
top-8, expert intermediate 768, bf16 weights).

Per token: router logits ``x @ w_router`` (fp32), softmax over the experts, the top-k
probabilities and their expert ids (``b.topk``), the k weights renormalised to sum 1, then each
selected expert's SwiGLU MLP ``(silu(x @ Wg[e]) * (x @ Wu[e])) @ Wd[e]`` and the weighted sum
of the k expert outputs.

The expert weights are stacked tables ``w_gate`` / ``w_up`` (experts, hidden, inter) and
``w_down`` (experts, inter, hidden); ``b.gather_rows`` picks the selected experts' slabs by id
and the expert MLPs run as batched matmuls over the tokens·k selections, each an M = 1 row
(decode shape). The compiler (canonical/gathered_matmul.py) reads each selection's slab once,
straight into SBUF, when tokens·k <= experts (a repeated expert is read again, not
deduplicated), and every expert once, applied to all tokens, when tokens·k > experts: never
more than the whole table.

Router logits are computed in fp32 (bf16 operands widened): the routing is a discrete
choice, and fp32 logits keep the compiled kernel's top-k selection the same as the float64
reference's whenever the k-th and (k+1)-th probabilities are further apart than fp32 rounding
(``routing_margin`` reports the gap; the shipped inputs keep it wide).
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import bfloat16, float32, get_dtype
from ..tensor.builder import Builder
from .registry import Workload, register

QWEN3_30B_A3B_MOE = {"hidden": 2048, "experts": 128, "top_k": 8, "inter": 768}
MOE_PARAMS = ("w_router", "w_gate", "w_up", "w_down")


def moe_router(b: Builder, tokens, hidden, experts, top_k, inter, dt):
    """The MoE block's inputs on ``b`` (``x``, ``w_router``, ``w_gate``, ``w_up``, ``w_down``)
    and its router: softmax over the experts in f32, the top ``top_k`` per token renormalised.
    Returns ``(x, w_gate, w_up, w_down, top_i, weights)``, ``top_i`` / ``weights`` (tokens, k)."""
    x = b.add_input("x", (tokens, hidden), dt)
    w_router = b.add_input("w_router", (hidden, experts), dt)
    w_gate = b.add_input("w_gate", (experts, hidden, inter), dt)
    w_up = b.add_input("w_up", (experts, hidden, inter), dt)
    w_down = b.add_input("w_down", (experts, inter, hidden), dt)

    logits = x.astype(float32) @ w_router.astype(float32)  # (tokens, experts)
    e = b.exp(logits - b.max(logits, axis=-1, keepdims=True))
    probs = e / b.sum(e, axis=-1, keepdims=True)
    top_p, top_i = b.topk(probs, top_k)  # (tokens, k), descending; int32 ids
    weights = top_p / b.sum(top_p, axis=-1, keepdims=True)
    return x, w_gate, w_up, w_down, top_i, weights


def build_moe(tokens=4, hidden=2048, experts=128, top_k=8, inter=768, dtype=bfloat16):
    """The MoE block graph: inputs ``x`` (tokens, hidden), ``w_router`` (hidden, experts),
    ``w_gate`` / ``w_up`` (experts, hidden, inter), ``w_down`` (experts, inter, hidden) — each
    expert's projections as (in, out) matrices, the contraction on the partitions; output
    ``y`` (tokens, hidden) in ``dtype``."""
    b = Builder("moe")
    dt = get_dtype(dtype)
    x, w_gate, w_up, w_down, top_i, weights = moe_router(b, tokens, hidden, experts, top_k, inter, dt)

    n = tokens * top_k
    sel = b.reshape(top_i, (n,))  # selection j = token j // k, its (j % k)-th expert
    wg = b.gather_rows(w_gate, sel)  # (n, hidden, inter): only the selected slabs move
    wu = b.gather_rows(w_up, sel)
    wd = b.gather_rows(w_down, sel)  # (n, inter, hidden)
    xs = b.reshape(b.broadcast_to(b.reshape(x, (tokens, 1, hidden)), (tokens, top_k, hidden)), (n, 1, hidden))
    g = (xs @ wg).astype(float32)  # (n, 1, inter): one vector-matrix product per selection
    u = (xs @ wu).astype(float32)
    act = (g / (1 + b.exp(-g)) * u).astype(dt)  # silu(g) * u, as users write it
    y = (act @ wd).astype(float32)  # (n, 1, hidden)
    y = b.reshape(y, (tokens, top_k, hidden)) * b.reshape(weights, (tokens, top_k, 1))
    b.set_outputs({"y": b.sum(y, axis=1).astype(dt)})
    return b.graph


def _route64(x, w_router, top_k):
    """float64 routing: (probabilities (tokens, experts), selected ids (tokens, k))."""
    logits = x @ w_router
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ids = np.argsort(-p, axis=-1, kind="stable")[:, :top_k]  # descending, ties to the lower id
    return p, ids


def moe_reference(x, w_router, w_gate, w_up, w_down, top_k=None):
    """float64 NumPy, one token and one selected expert at a time (written from the model's
    definition, not from the graph). ``top_k`` defaults to Qwen3-30B-A3B's 8."""
    x, w_router, w_gate, w_up, w_down = (
        np.asarray(a, np.float64) for a in (x, w_router, w_gate, w_up, w_down)
    )
    k = QWEN3_30B_A3B_MOE["top_k"] if top_k is None else top_k
    p, ids = _route64(x, w_router, k)
    y = np.zeros_like(x)
    for t in range(x.shape[0]):
        w = p[t, ids[t]] / p[t, ids[t]].sum()
        for j, e in enumerate(ids[t]):
            g = x[t] @ w_gate[e]
            h = g / (1 + np.exp(-g)) * (x[t] @ w_up[e])
            y[t] += w[j] * (h @ w_down[e])
    return {"y": y}


def routing_margin(x, w_router, top_k) -> float:
    """The smallest gap, over tokens, between the k-th and (k+1)-th router probability (float64):
    a selection is stable under rounding when the gap is wider than the rounding."""
    p, _ = _route64(np.asarray(x, np.float64), np.asarray(w_router, np.float64), top_k)
    s = -np.sort(-p, axis=-1)
    if top_k >= p.shape[-1]:
        return float("inf")
    return float((s[:, top_k - 1] - s[:, top_k]).min())


def moe_inputs(graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs at a trained model's scale: unit activations, weights ~ 1/sqrt(fan-in); the router
    weights are redrawn (a few seeds) until every token's k-th and (k+1)-th probabilities are at
    least 1e-4 apart relative to the top probability, so the selection is unambiguous."""
    rng = np.random.default_rng(seed)
    shapes = {n: v.type for n, v in zip(graph.input_names, graph.inputs)}
    out = {}
    for name, t in shapes.items():
        a = (
            rng.standard_normal(t.shape)
            if name == "x"
            else rng.standard_normal(t.shape) / np.sqrt(t.shape[-2])
        )
        out[name] = np.asarray(a).astype(t.dtype.np_dtype)
    top_k = moe_top_k(graph)
    for _ in range(64):
        p, _ids = _route64(out["x"].astype(np.float64), out["w_router"].astype(np.float64), top_k)
        if routing_margin(out["x"], out["w_router"], top_k) >= 1e-4 * p.max():
            break
        t = shapes["w_router"]
        out["w_router"] = (rng.standard_normal(t.shape) / np.sqrt(t.shape[0])).astype(t.dtype.np_dtype)
    return out


def moe_top_k(graph) -> int:
    """k of the graph's top-k (the router's ``tensor.topk``)."""
    return next(op for op in graph.body if op.name == "tensor.topk").attrs["k"]


def moe_min_hbm_bytes(tokens, hidden, experts, top_k, inter, itemsize=2) -> int:
    """The stated minimum HBM traffic of the block (when no selection repeats an expert): the
    selected experts' weights once per (token, expert) selection (each table capped at its
    size), the router weight, the activations in and out."""
    n = tokens * top_k
    slabs = 3 * min(n, experts) * hidden * inter * itemsize
    return slabs + hidden * experts * itemsize + 2 * tokens * hidden * itemsize


class _MoE(Workload):
    """Inputs with an unambiguous routing (``moe_inputs``). k is not visible in the input
    shapes: the registered reference uses Qwen3-30B-A3B's top-8 (call ``moe_reference(...,
    top_k=k)`` for a graph built with another k)."""

    def inputs(self, graph, seed: int = 0) -> dict[str, np.ndarray]:
        return moe_inputs(graph, seed)


MOE = register(
    _MoE(
        "moe",
        build_moe,
        moe_reference,
        {"tokens": 4, "hidden": 2048, "experts": 128, "inter": 768},
        "Qwen3-30B-A3B MoE block: router softmax over 128 experts, top-8, gathered expert SwiGLU MLPs",
    )
)
