"""Cost of the collective NKI ops: ring algorithms over the interconnect.

A collective over N ranks runs as a ring: all_reduce in 2(N-1) steps of B/N bytes (reduce-
scatter then all-gather), all_gather in N-1 steps of B_in bytes, reduce_scatter and all_to_all
in N-1 steps of B_in/N bytes (B: the source's bytes). A step costs
``collective_step_latency_ns + chunk / collective_link_bytes_per_s`` (Target: NeuronLink-v3 per
chip over its 8 physical cores; the step latency is an assumption, no fact gives it). Stated
assumptions: the ranks' steps run in lock step, the reduction arithmetic hides behind the
transfers, and the collective engine is its own resource (it overlaps compute on other
engines but collectives run one after another). A collective of one rank is a local HBM copy
at the core's DMA bandwidth. The instruction's ``bytes`` is what this rank sends.
"""

from __future__ import annotations

from ..nki.ops.collective import AllGatherOp, AllReduceOp, AllToAllOp, CollectiveOp, ReduceScatterOp
from ..nki.target import Target
from .instruction_cost import COST_RULES, InstructionCost

ENGINE = "collective"


def ring_steps(op: CollectiveOp) -> tuple[int, int]:
    """(steps, bytes per step) of the ring algorithm for ``op``."""
    n, b = op.attrs["world"], op.src_bytes()
    if isinstance(op, AllReduceOp):
        return 2 * (n - 1), b // n
    if isinstance(op, AllGatherOp):
        return n - 1, b
    return n - 1, b // n  # reduce_scatter, all_to_all


def _collective(op: CollectiveOp, target: Target) -> InstructionCost:
    steps, chunk = ring_steps(op)
    if op.attrs["world"] == 1:
        local = target.dma_engines * target.dma_engine_bytes_per_s
        return InstructionCost(ENGINE, target.dma_first_byte_latency_ns + op.src_bytes() / local * 1e9)
    ns = steps * (target.collective_step_latency_ns + chunk / target.collective_link_bytes_per_s * 1e9)
    return InstructionCost(ENGINE, ns, bytes=op.wire_bytes())


for _cls in (AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp):
    COST_RULES[_cls] = _collective
