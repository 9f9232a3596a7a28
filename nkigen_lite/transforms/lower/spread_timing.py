"""Estimated times of a spread reduction's chunks, used to plan them (spread_reduce.py): when each
chunk load has arrived in SBUF, and when an engine working through the chunks in order is done
with each.

The figures follow the cost model's rules (docs/costmodel.md; every number from the target):
DMAs issue round robin on the HW-DGE queues (``dge_issue_ns`` each), a transfer is ready
``dma_first_byte_latency_ns`` after its issue and transfers run one at a time at
``max(bytes / (engines x rate x eff(chunk)), bytes / HBM rate)``; an instruction reading a
tile another engine wrote starts that engine's write-drain + the reader's semaphore-to-start
later. They are planning estimates only: the kernel's figure is ``Kernel.estimate()``.
"""

from __future__ import annotations

from ...perf.dma_cost import dma_efficiency, dma_engines_used
from ...perf.latency import dependency_latency


def transfer_ns(target, partitions: int, bytes_per_partition: int) -> float:
    """Transfer time of one DMA moving ``bytes_per_partition`` contiguous bytes on each of
    ``partitions`` partitions (HBM on one side)."""
    total = partitions * bytes_per_partition
    eng = dma_engines_used(partitions, target)
    eff = dma_efficiency(bytes_per_partition, target)
    rate = target.dma_engine_bytes_per_s * 1e-9
    return max(total / (eng * rate * eff), total / (target.hbm_bytes_per_s * 1e-9))


def arrivals(target, partitions: int, sizes: list[int]) -> list[float]:
    """End (ns) of each of the DMAs of ``sizes`` bytes per partition, issued in order at time 0
    round robin on the HW-DGE queues, transfers one after another."""
    q = [0.0] * target.dge_instances
    end, out = 0.0, []
    for i, b in enumerate(sizes):
        k = i % len(q)
        issue = q[k]
        q[k] = issue + target.dge_issue_ns
        ready = issue + target.dge_issue_ns + target.dma_first_byte_latency_ns
        end = max(end, ready) + transfer_ns(target, partitions, b)
        out.append(end)
    return out


class EngineClock:
    """One engine working through instructions in order: ``run`` returns the end of an
    instruction of ``ns`` whose input another engine (``producer``) finished at ``ready``."""

    def __init__(self, target, engine: str):
        self.target, self.engine, self.free = target, engine, 0.0

    def run(self, ready: float, producer: str, ns: float) -> float:
        lat = dependency_latency(producer, self.engine, self.target)
        self.free = max(self.free, ready + lat) + ns
        return self.free
