"""The tensor-parallel plan of the Qwen3-30B-A3B MoE block (the ``moe`` workload,
nkigen_lite/workloads/moe.py): every expert sharded across the ranks along its intermediate
dimension, Megatron style, as the public reference runs the model at TP = 4 (expert
intermediate 768 → 192 per rank).

- the router weight is replicated: every rank computes the same logits, softmax, top-k and
  renormalised weights (a few tokens × 128 experts: negligible work);
- ``w_gate`` / ``w_up`` (experts, hidden, inter) are column-parallel (the intermediate axis
  sharded) and ``w_down`` (experts, inter, hidden) row-parallel: each rank gathers its block of
  every selected expert's slabs (1/TP of the bytes), runs the SwiGLU on its intermediate slice
  and gets a partial down projection;
- the partial sums stay partial through the routing weights and the sum over the k experts
  (both linear) and are all-reduced once, in fp32, as (tokens, hidden) — one collective per
  block, of tokens × hidden × 4 bytes.

Expert parallelism (whole experts per rank, tokens dispatched) is the other shipped plan,
``MOE_EP_PLAN`` (parallel/moe_ep.py), on the dense-combine form of the block: with a few tokens
and static shapes a rank cannot provide for only the selections landing on its experts, so it
runs its E/N experts on all tokens. This plan's gathered bytes scale with tokens·k, that one's
with E/N: this one moves fewer weight bytes for a few decode tokens, that one once tokens·k
passes E.
"""

from __future__ import annotations

MOE_TP_PLAN = {"w_router": "replicated", "w_gate": "column", "w_up": "column", "w_down": "row"}
