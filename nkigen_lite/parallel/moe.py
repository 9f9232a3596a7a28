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

Expert parallelism (whole experts per rank, tokens dispatched by all_to_all) is not this plan:
with a few tokens and static shapes every rank would have to provide for all tokens·k
selections landing on it (capacity = tokens·k), gathering as many slabs per rank as one rank
does unsharded, while the intermediate split divides the gathered bytes by TP.
"""

from __future__ import annotations

MOE_TP_PLAN = {"w_router": "replicated", "w_gate": "column", "w_up": "column", "w_down": "row"}
