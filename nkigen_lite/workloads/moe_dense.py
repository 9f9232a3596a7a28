"""The Qwen3-30B-A3B MoE block written with a dense combine: every expert's SwiGLU MLP on every
token, weighted by combine weights that are zero for the experts a token did not select. The
same block as ``build_moe`` (workloads/moe.py: same inputs, same router, same float64 reference
``moe_reference``), in the form expert parallelism shards: split the experts over ranks and each
rank computes only its own experts, for all tokens, reading each of its experts' weights once
(parallel/moe_ep.py).

Per token t: router logits ``x @ w_router`` (fp32), softmax, the top-k probabilities and ids,
renormalised to weights ``w``; the combine weights ``c[e, t] = sum_j w[t, j] * (ids[t, j] == e)``
(an iota compare, built experts-major so nothing is transposed); each expert's
``silu(x @ Wg[e]) * (x @ Wu[e])`` for all tokens as batched matmuls (experts, tokens, ·), weighted
by ``c[e, t]`` before its down projection ``@ Wd[e]`` (the weight is a per-row scale, so it
commutes with the matmul); the output ``sum_e y[e, t]``, written as a ones-row matmul over the
experts (``(1, E) @ (E, tokens·hidden)``), which reads the (experts, tokens, hidden) products in
whole rows.

On a rank the batched expert matmuls are ``tensor.gathered_matmul`` over the rank's experts
(canonical/expert_matmul.py: each expert matrix read in one DMA). Unsharded it does experts /
(tokens · k) times the work of the gathered form when few tokens select few experts; it is the
form whose expert axis splits cleanly, not a faster single-rank block.
"""

from __future__ import annotations

from ..ir.dtypes import bfloat16, float32, get_dtype, int32
from ..tensor.builder import Builder
from .moe import moe_router


def build_moe_dense(tokens=4, hidden=2048, experts=128, top_k=8, inter=768, dtype=bfloat16):
    """The MoE block graph with a dense combine: inputs and output as ``build_moe``'s
    (``x`` (tokens, hidden), ``w_router`` (hidden, experts), ``w_gate`` / ``w_up``
    (experts, hidden, inter), ``w_down`` (experts, inter, hidden); ``y`` (tokens, hidden))."""
    b = Builder("moe_dense")
    dt = get_dtype(dtype)
    x, w_gate, w_up, w_down, top_i, weights = moe_router(b, tokens, hidden, experts, top_k, inter, dt)
    hit = b.equal(b.reshape(top_i, (1, tokens, top_k)), b.iota((experts, 1, 1), 0, int32))
    cw = b.sum(b.where(hit, b.reshape(weights, (1, tokens, top_k)), 0.0), axis=-1, keepdims=True)  # (E, t, 1)

    xe = b.reshape(x, (1, tokens, hidden))  # every token to every expert
    g = (xe @ w_gate).astype(float32)  # (experts, tokens, inter)
    u = (xe @ w_up).astype(float32)
    act = (g / (1 + b.exp(-g)) * u * cw).astype(dt)  # silu(g) * u, weighted by the combine
    y = (act @ w_down).astype(float32)  # (experts, tokens, hidden), zero off the selection
    ones = b.full((1, experts), 1.0, float32)
    out = ones @ b.reshape(y, (experts, tokens * hidden))  # the sum over the experts
    b.set_outputs({"y": b.reshape(out, (tokens, hidden)).astype(dt)})
    return b.graph
