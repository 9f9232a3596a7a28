"""Dependency latency between two NKI instructions: how long after a producer finishes a consumer
of its data (or of its buffer) may start.

Across engines: producer write-drain + consumer semaphore-to-start [NKIPY-HW]; on one compute
engine ~100 engine cycles ("many back-to-back dependent instructions", [ARCH-T1]); none between
matmuls (accumulation groups pipeline at the MM initiation interval, [ARCH-T1]); a DMA has no
drain listed and its own start is its first-byte latency, counted in its time.
"""

from __future__ import annotations

from ..nki.target import Target
from .instruction_cost import clock_hz

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma", "collective")


def dependency_latency(producer: str, consumer: str, target: Target) -> float:
    """Delay (ns) between a ``producer`` engine finishing and a dependent ``consumer`` starting."""
    t = target
    if producer == consumer:
        if consumer in ("dma", "collective"):
            return t.dma_write_drain_ns
        if consumer == "tensor":
            return 0.0
        return t.vector_instruction_overhead_cycles * 1e9 / clock_hz(consumer, t)
    drain = {
        "tensor": t.tensor_write_drain_ns,
        "vector": t.vector_write_drain_ns,
        "scalar": t.scalar_write_drain_ns,
        "gpsimd": t.gpsimd_write_drain_ns,
        "dma": t.dma_write_drain_ns,
        "collective": t.dma_write_drain_ns,  # collectives move data by DMA (assumed)
    }
    start = {
        "tensor": t.tensor_sem_to_start_ns,
        "vector": t.vector_sem_to_start_ns,
        "scalar": t.scalar_sem_to_start_ns,
        "gpsimd": t.gpsimd_sem_to_start_ns,
        "dma": 0.0,
        "collective": 0.0,
    }
    return drain[producer] + start[consumer]


def latency_table(target: Target) -> dict[tuple[str, str], float]:
    """``dependency_latency`` for every (producer, consumer) engine pair."""
    return {(p, c): dependency_latency(p, c, target) for p in ENGINES for c in ENGINES}
