"""The Qwen3-30B-A3B MoE block written with a dense combine: every expert's SwiGLU MLP on every
token, weighted by a (tokens, experts) combine matrix that is zero for the experts a token did
not select. The same block as ``build_moe`` (workloads/moe.py: same inputs, same router, same
float64 reference ``moe_reference``), in the form expert parallelism shards: split the experts
over ranks and each rank computes only its own experts, for all tokens, reading each of its
experts' weights once (parallel/moe_ep.py).

Per token t: router logits ``x @ w_router`` (fp32), softmax, the top-k probabilities and ids,
renormalised to weights ``w``; ``c[t, e] = sum_j w[t, j] * (ids[t, j] == e)`` (``one_hot``);
each expert's ``(silu(x @ Wg[e]) * (x @ Wu[e])) @ Wd[e]`` for all tokens as batched matmuls
(experts, tokens, ·); the output ``sum_e c[t, e] * y[e, t]``.

Unsharded it does experts / (tokens · k) times the work of the gathered form when few tokens
select few experts; it is the form whose expert axis splits cleanly, not a faster single-rank
block.
"""

from __future__ import annotations

from ..ir.dtypes import bfloat16, float32, get_dtype
from ..tensor.builder import Builder
from .moe import moe_router


def build_moe_dense(tokens=4, hidden=2048, experts=128, top_k=8, inter=768, dtype=bfloat16):
    """The MoE block graph with a dense combine: inputs and output as ``build_moe``'s
    (``x`` (tokens, hidden), ``w_router`` (hidden, experts), ``w_gate`` / ``w_up``
    (experts, hidden, inter), ``w_down`` (experts, inter, hidden); ``y`` (tokens, hidden))."""
    b = Builder("moe_dense")
    dt = get_dtype(dtype)
    x, w_gate, w_up, w_down, top_i, weights = moe_router(b, tokens, hidden, experts, top_k, inter, dt)
    onehot = b.one_hot(top_i, experts)  # (tokens, k, experts)
    combine = b.sum(onehot * b.reshape(weights, (tokens, top_k, 1)), axis=1)  # (tokens, experts)

    xe = b.reshape(x, (1, tokens, hidden))  # every token to every expert
    g = (xe @ w_gate).astype(float32)  # (experts, tokens, inter)
    u = (xe @ w_up).astype(float32)
    act = (g / (1 + b.exp(-g)) * u).astype(dt)  # silu(g) * u, as users write it
    y = (act @ w_down).astype(float32)  # (experts, tokens, hidden)
    cw = b.reshape(b.transpose(combine, (1, 0)), (experts, tokens, 1))
    b.set_outputs({"y": b.sum(y * cw, axis=0).astype(dt)})
    return b.graph
