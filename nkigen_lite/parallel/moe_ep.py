"""The expert-parallel plan of the Qwen3-30B-A3B MoE block: experts sharded over the ranks
(rank r owns experts [r·E/N, (r+1)·E/N)), tokens sharded by sequence, all_gather / all_to_all
dispatch and a reduce_scatter combine. It shards the dense-combine form of the block
(``build_moe_dense``, workloads/moe_dense.py: every expert on every token, weighted by a
(tokens, experts) combine matrix zero off the selection), whose expert axis splits cleanly:

- ``x`` is sharded by tokens (axis 0) and so is the output ``y``: each rank routes its own
  tokens (router weight replicated: logits, softmax, top-k, renormalised weights and the
  combine rows of its tokens, no communication);
- ``w_gate`` / ``w_up`` / ``w_down`` are sharded along the expert axis (axis 0): each rank
  holds E/N whole experts and reads each of them once;
- dispatch: the expert matmuls need every token, so ``x`` is all-gathered (tokens × hidden,
  the activation dtype); the combine weights are re-sharded from tokens to experts by one
  all_to_all ((experts, tokens/N) → (experts/N, tokens), fp32);
- each rank runs its experts' SwiGLU MLPs on all tokens and sums their weighted outputs: a
  partial sum over experts, which the combine reduce-scatters back to the token owners
  (tokens × hidden, fp32) before the cast to the activation dtype.

Three collectives per block. Against ``MOE_TP_PLAN`` (parallel/moe.py), which gathers 1/N of
each selected expert's slabs once per (token, expert) selection: this plan reads E/N whole
experts per rank whatever the routing, so it moves fewer weight bytes once tokens·k reaches
E (every expert busy), and more for a few decode tokens (tokens·k < E).

``MOE_EP_REPLICATED_PLAN`` is the variant for decode, where the tokens (one, say) cannot be
sharded: the tokens are replicated, every rank routes all of them (the same on every rank), runs
its E/N experts on them and the partial sum over experts is all-reduced — no dispatch, one
collective.
"""

from __future__ import annotations

MOE_EP_PLAN = {
    "x": 0,  # tokens sharded by sequence
    "w_router": "replicated",
    "w_gate": 0,  # experts sharded
    "w_up": 0,
    "w_down": 0,
    "y": 0,  # the output stays sharded by tokens: the combine is a reduce_scatter
}

MOE_EP_REPLICATED_PLAN = {"w_router": "replicated", "w_gate": 0, "w_up": 0, "w_down": 0}
"""Experts sharded, tokens (``x``) and output replicated: one all_reduce combine."""
