"""The target one physical core of a kernel launched on several cores (LNC=2) sees.

Each core runs its own program (its loop share), so the cost model schedules one core's
program; what the cores share is the HBM stack of the pair (facts §1.2, §7: "the pair shares
one HBM stack (~725 GB/s, = 2.9 TB/s / 4)"). Assumed: the stack's bandwidth splits evenly, so a
core's DMA engines run at most at ``hbm_stack_bytes_per_s / lnc`` together.
"""

from __future__ import annotations

from dataclasses import replace

from ..nki.ops.program import lnc_of
from ..nki.target import Target


def per_core_target(graph, target: Target) -> Target:
    """``target`` with the DMA and HBM rates of one core of ``graph``'s launch."""
    lnc = lnc_of(graph)
    if lnc == 1:
        return target
    share = target.hbm_stack_bytes_per_s / lnc
    return replace(
        target,
        dma_engine_bytes_per_s=min(target.dma_engine_bytes_per_s, share / target.dma_engines),
        hbm_bytes_per_s=min(target.hbm_bytes_per_s, share),
    )
