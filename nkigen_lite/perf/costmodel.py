"""The trn2 cost model: ``estimate(graph) -> Estimate`` for an NKI kernel graph.

Three figures (docs/costmodel.md gives every formula and its source):

- ``overlapped_ns``: engines and DMA queues run concurrently (a double-buffered schedule):
  ``max(T_tensor, T_vector, T_scalar, T_gpsimd, T_dma)``, each engine's busy time the sum of its
  instructions' steady-state times; ``T_dma = L + max(sum of transfers, issues x 600 ns / DGEs)``
  — one first-byte latency L, the rest hidden behind other in-flight DMAs.
- ``serial_ns``: nothing overlaps: every instruction's time, each DMA with its issue and L, plus
  a latency for every read of data an earlier instruction wrote (producer write-drain + consumer
  semaphore-to-start across engines; ~100 engine cycles on the same engine).
- ``roofline_ns``: ``max(matmul FLOPs / peak FLOP/s, min HBM bytes / HBM bandwidth)``.

Loop bodies run ``trips`` times. The model is walked once for the first iteration and once for a
steady-state iteration (the state the dependency latencies depend on — which engine last wrote
each tensor — repeats from the second iteration on), so the cost of a walk is independent of the
trip counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.errors import BuildError
from ..ir.graph import Block, Graph, ReturnOp
from ..nki.ops import ForiLoopOp, HbmViewOp, MatmulOp
from ..nki.target import TRN2, Target
from ..nki.verify import verify
from .instruction_cost import FREE_OPS, InstructionCost, clock_hz, instruction_cost

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")


@dataclass(frozen=True)
class Estimate:
    """Estimated trn2 execution time of one kernel (ns) and its parts (field names are public)."""

    overlapped_ns: float
    serial_ns: float
    roofline_ns: float
    ratio: float                      # overlapped_ns / roofline_ns
    by_engine_ns: dict = field(default_factory=dict)   # tensor, vector, scalar, gpsimd, dma
    compute_roofline_ns: float = 0.0
    memory_roofline_ns: float = 0.0
    dma_transfer_ns: float = 0.0      # sum of DMA transfer times
    dma_issue_ns: float = 0.0         # sum of HW-DGE issue times
    dependency_ns: float = 0.0        # the latency part of serial_ns
    flops: int = 0
    dma_bytes: int = 0
    min_hbm_bytes: int = 0
    instructions: int = 0             # executed instructions, DMAs included

    @property
    def bound(self) -> str:
        """The resource that sets the overlapped time (an engine name or ``dma``)."""
        return max(ENGINES, key=lambda e: self.by_engine_ns[e])

    def summary(self) -> str:
        """A few human-readable lines."""
        us = 1e-3
        eng = ", ".join(f"{e} {self.by_engine_ns[e] * us:,.2f}" for e in ENGINES)
        return (f"estimate: {self.overlapped_ns * us:,.2f} us overlapped ({self.bound}-bound), "
                f"{self.serial_ns * us:,.2f} us serial; roofline {self.roofline_ns * us:,.2f} us "
                f"(compute {self.compute_roofline_ns * us:,.2f}, memory "
                f"{self.memory_roofline_ns * us:,.2f}); ratio {self.ratio:.2f}\n"
                f"busy us: {eng}; DMA transfers {self.dma_transfer_ns * us:,.2f} us, "
                f"issue {self.dma_issue_ns * us:,.2f} us, {self.dma_bytes:,} B; "
                f"{self.instructions:,} instructions, {self.flops:,} matmul FLOPs")


class _Totals:
    """Additive sums over one walk of a block."""

    __slots__ = ("busy", "dma_count", "serial", "deps", "flops", "compute_ns", "count", "dma_bytes")

    def __init__(self):
        self.busy = dict.fromkeys(ENGINES, 0.0)
        self.dma_count = self.serial = self.deps = self.flops = 0
        self.compute_ns = 0.0
        self.count = self.dma_bytes = 0

    def add(self, other: _Totals, times: int = 1) -> None:
        for e in ENGINES:
            self.busy[e] += times * other.busy[e]
        for k in ("dma_count", "serial", "deps", "flops", "compute_ns", "count", "dma_bytes"):
            setattr(self, k, getattr(self, k) + times * getattr(other, k))


def dependency_latency(producer: str, consumer: str, target: Target) -> float:
    """Delay (ns) between a producer finishing and a consumer of its data starting, in the
    serial model: write-drain + semaphore-to-start across engines [NKIPY-HW]; ~100 engine
    cycles on one compute engine [ARCH-T1]; none between matmuls (accumulation groups pipeline,
    MM initiation interval max(N, 64) [ARCH-T1]); a DMA's own start is its first-byte latency,
    counted in its time."""
    t = target
    if producer == consumer:
        if consumer == "dma":
            return t.dma_write_drain_ns
        if consumer == "tensor":
            return 0.0
        return t.vector_instruction_overhead_cycles * 1e9 / clock_hz(consumer, t)
    drain = {"tensor": t.tensor_write_drain_ns, "vector": t.vector_write_drain_ns,
             "scalar": t.scalar_write_drain_ns, "gpsimd": t.gpsimd_write_drain_ns,
             "dma": t.dma_write_drain_ns}
    start = {"tensor": t.tensor_sem_to_start_ns, "vector": t.vector_sem_to_start_ns,
             "scalar": t.scalar_sem_to_start_ns, "gpsimd": t.gpsimd_sem_to_start_ns, "dma": 0.0}
    return drain[producer] + start[consumer]


class _Model:
    """Walks an NKI graph, accumulating per-engine, serial and roofline figures."""

    def __init__(self, target: Target):
        self.target = target
        self.costs: dict[int, InstructionCost] = {}
        self.latencies = {(p, c): dependency_latency(p, c, target) for p in ENGINES for c in ENGINES}

    def cost(self, op) -> InstructionCost:
        if id(op) not in self.costs:
            self.costs[id(op)] = instruction_cost(op, self.target)
        return self.costs[id(op)]

    def walk(self, block: Block, writers: dict) -> _Totals:
        tot = _Totals()
        tgt = self.target
        for op in block:
            if isinstance(op, ForiLoopOp):
                first = self.walk(op.body, writers)
                tot.add(first)
                if op.trip_count > 1:
                    tot.add(self.walk(op.body, writers), op.trip_count - 1)
                continue
            if isinstance(op, ReturnOp):
                continue
            if isinstance(op, FREE_OPS):
                if op.results:
                    writers.pop(id(op.results[0]), None)     # fresh memory: nobody wrote it
                continue
            c = self.cost(op)
            tot.count += 1
            tot.busy[c.engine] += c.ns
            tot.serial += c.ns
            if c.engine == "dma":
                tot.dma_count += 1
                tot.dma_bytes += c.bytes
                tot.serial += tgt.dge_issue_ns + tgt.dma_first_byte_latency_ns
            if c.flops:
                tot.flops += c.flops
                tot.compute_ns += c.flops / c.peak_flops_per_s * 1e9
            lat = max((self.latencies[writers[v], c.engine] for v in _reads(op) if v in writers),
                      default=0.0)
            tot.deps += lat
            tot.serial += lat
            for v in _writes(op):
                writers[v] = c.engine
        return tot


def _root(v) -> int:
    """Identity of the memory a tensor value names (an HBM view names its root tensor)."""
    op = v.defining_op
    return id(op.operand(0) if isinstance(op, HbmViewOp) else v)


def _reads(op) -> list:
    names = [n for n, _ in op.access_attrs() if n not in op.writes]
    if isinstance(op, MatmulOp) and op.attrs["accumulate"]:
        names.append("dst")
    return [_root(op.access(n).tensor) for n in names]


def _writes(op) -> list:
    return [_root(op.access(n).tensor) for n in op.writes if op.access(n) is not None]


def estimate(graph: Graph, target: Target = TRN2) -> Estimate:
    """Estimate the trn2 execution time of an NKI kernel graph (verifying it first)."""
    if not isinstance(graph, Graph):
        raise BuildError(f"estimate takes an NKI kernel Graph, got {type(graph).__name__}")
    verify(graph, target)
    tot = _Model(target).walk(graph.body, {})
    issue = tot.dma_count * target.dge_issue_ns
    transfer = tot.busy["dma"]
    dma = (target.dma_first_byte_latency_ns + max(transfer, issue / target.dge_instances)
           if tot.dma_count else 0.0)
    by_engine = {**tot.busy, "dma": dma}
    overlapped = max(by_engine.values())
    io = list(graph.inputs) + list(graph.outputs.values())
    min_bytes = sum(v.type.size * v.type.dtype.itemsize for v in io)
    memory = min_bytes / target.hbm_bytes_per_s * 1e9
    roofline = max(tot.compute_ns, memory)
    return Estimate(
        overlapped_ns=overlapped, serial_ns=tot.serial, roofline_ns=roofline,
        ratio=overlapped / roofline if roofline else float("inf"),
        by_engine_ns=by_engine, compute_roofline_ns=tot.compute_ns, memory_roofline_ns=memory,
        dma_transfer_ns=transfer, dma_issue_ns=issue, dependency_ns=tot.deps, flops=tot.flops,
        dma_bytes=tot.dma_bytes, min_hbm_bytes=min_bytes, instructions=tot.count,
    )
