"""The trn2 cost model: ``estimate(graph) -> Estimate`` for an NKI kernel graph.

Four figures (docs/costmodel.md gives every formula and its source):

- ``scheduled_ns``: the executed instruction stream list-scheduled per engine and DMA queue with
  data dependencies through tiles and buffer reuse (``schedule.py``). The headline figure.
- ``lower_bound_ns``: engines and DMA queues overlap perfectly (an ideal multi-buffered
  schedule): ``max(T_tensor, T_vector, T_scalar, T_gpsimd, T_dma)``, each engine's busy time
  the sum of its instructions' steady-state times; ``T_dma = L + max(sum of transfers,
  issues x 600 ns / DGEs)`` — one first-byte latency L, the rest hidden.
- ``serial_ns``: nothing overlaps: every instruction's time, each DMA with its issue and L, plus
  the largest dependency latency of every instruction (``latency.py``).
- ``roofline_ns``: ``max(matmul FLOPs / peak FLOP/s, min HBM bytes / HBM bandwidth)``.

``lower_bound_ns <= scheduled_ns <= serial_ns`` always holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.errors import BuildError
from ..ir.graph import Block, Graph, ReturnOp
from ..nki.ops import ForiLoopOp
from ..nki.target import TRN2, Target
from ..nki.verify import verify
from .instruction_cost import FREE_OPS
from .latency import ENGINES, dependency_latency
from .lnc_cost import per_core_target
from .schedule import DMA, PORT, Scheduler, queue_name
from .stats import min_io_bytes

__all__ = ["ENGINES", "Estimate", "dependency_latency", "estimate"]


@dataclass(frozen=True)
class Estimate:
    """Estimated trn2 execution time of one kernel (ns) and its parts (field names are public)."""

    scheduled_ns: float
    lower_bound_ns: float
    serial_ns: float
    roofline_ns: float
    ratio: float  # scheduled_ns / roofline_ns
    by_engine_ns: dict = field(default_factory=dict)  # lower-bound time per engine (+ dma)
    by_resource_ns: dict = field(default_factory=dict)  # busy time per scheduled resource
    by_op_ns: dict = field(default_factory=dict)  # busy time per source op (NKI loc)
    compute_roofline_ns: float = 0.0
    memory_roofline_ns: float = 0.0
    dma_transfer_ns: float = 0.0  # sum of DMA transfer times
    dma_issue_ns: float = 0.0  # sum of HW-DGE issue times
    dependency_ns: float = 0.0  # the latency part of serial_ns
    flops: int = 0
    dma_bytes: int = 0
    min_hbm_bytes: int = 0
    instructions: int = 0  # executed instructions, DMAs included

    @property
    def bound(self) -> str:
        """The resource that sets the lower bound (an engine name or ``dma``)."""
        return max(ENGINES, key=lambda e: self.by_engine_ns[e])

    @property
    def critical_engine(self) -> str:
        """The scheduled resource with the most busy time (an engine, ``dma`` for the DMA
        transfers, ``dma_queueN`` for a HW-DGE issue queue, or ``vector_gpsimd_port``); on a tie
        the first in that order (the shared port only when it is busier than GpSimd alone)."""
        order = list(self.by_resource_ns)
        return max(order, key=lambda r: (self.by_resource_ns[r], -order.index(r)))

    @property
    def lower_bound_ratio(self) -> float:
        return self.lower_bound_ns / self.roofline_ns if self.roofline_ns else float("inf")

    def top_ops(self, n: int = 3) -> list[tuple[str, float]]:
        """The ``n`` source ops with the most busy time, largest first."""
        return sorted(self.by_op_ns.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def summary(self) -> str:
        """A few human-readable lines."""
        us = 1e-3
        eng = ", ".join(f"{e} {self.by_engine_ns[e] * us:,.2f}" for e in ENGINES)
        ops = "; ".join(f"{name} {t * us:,.2f}" for name, t in self.top_ops())
        return (
            f"estimate: {self.scheduled_ns * us:,.2f} us scheduled (critical: "
            f"{self.critical_engine}), lower bound {self.lower_bound_ns * us:,.2f} us "
            f"({self.bound}-bound), {self.serial_ns * us:,.2f} us serial; roofline "
            f"{self.roofline_ns * us:,.2f} us (compute {self.compute_roofline_ns * us:,.2f}, "
            f"memory {self.memory_roofline_ns * us:,.2f}); ratio {self.ratio:.2f}\n"
            f"busy us: {eng}; DMA transfers {self.dma_transfer_ns * us:,.2f} us, "
            f"issue {self.dma_issue_ns * us:,.2f} us, {self.dma_bytes:,} B; "
            f"{self.instructions:,} instructions, {self.flops:,} matmul FLOPs\n"
            f"busiest ops (us): {ops}"
        )


class _Totals:
    """Additive sums over the executed instructions (loops multiplied out)."""

    def __init__(self):
        self.busy = dict.fromkeys(ENGINES, 0.0)
        self.port = 0.0
        self.by_op: dict[str, float] = {}
        self.dma_count = self.flops = self.count = self.dma_bytes = 0
        self.compute_ns = 0.0


def _static_walk(block: Block, mult: int, tot: _Totals, sched: Scheduler) -> None:
    tgt = sched.target
    for op in block:
        if isinstance(op, ForiLoopOp):
            _static_walk(op.body, mult * op.trip_count, tot, sched)
            continue
        if isinstance(op, (ReturnOp, *FREE_OPS)):
            continue
        c = sched._op_info(op).cost
        tot.count += mult
        tot.busy[c.engine] += mult * c.ns
        if c.sbuf_port:
            tot.port += mult * c.ns
        own = c.ns
        if c.engine == "dma":
            tot.dma_count += mult
            tot.dma_bytes += mult * c.bytes
            own += tgt.dge_issue_ns
        if c.flops:
            tot.flops += mult * c.flops
            tot.compute_ns += mult * c.flops / c.peak_flops_per_s * 1e9
        key = op.loc or op.name
        tot.by_op[key] = tot.by_op.get(key, 0.0) + mult * own


def estimate(
    graph: Graph, target: Target = TRN2, read_bytes: dict | None = None, written_bytes: dict | None = None
) -> Estimate:
    """Estimate the trn2 execution time of an NKI kernel graph (verifying it first);
    ``read_bytes`` ({input name: bytes the source program reads}) and ``written_bytes``
    ({aliased input name: bytes its in-place update writes}) set the minimum traffic
    (``stats.min_io_bytes``)."""
    if not isinstance(graph, Graph):
        raise BuildError(f"estimate takes an NKI kernel Graph, got {type(graph).__name__}")
    verify(graph, target)
    target = per_core_target(graph, target)  # LNC=2: one core's program on its share of HBM
    sched = Scheduler(target, {})
    tot = _Totals()
    _static_walk(graph.body, 1, tot, sched)
    sched.run(graph.body)
    issue = tot.dma_count * target.dge_issue_ns
    transfer = tot.busy["dma"]
    dma = (
        target.dma_first_byte_latency_ns + max(transfer, issue / target.dge_instances)
        if tot.dma_count
        else 0.0
    )
    by_engine = {**tot.busy, "dma": dma}
    lower = max(by_engine.values())
    serial = (
        sum(tot.busy.values())
        + tot.dma_count * (target.dge_issue_ns + target.dma_first_byte_latency_ns)
        + sched.dependency_ns
    )
    scheduled = sched.makespan
    resources = {e: tot.busy[e] for e in ENGINES if e != "dma"}
    resources[DMA] = transfer
    for q in range(target.dge_instances):
        n_q = tot.dma_count // target.dge_instances + (q < tot.dma_count % target.dge_instances)
        resources[queue_name(q)] = n_q * target.dge_issue_ns
    resources[PORT] = tot.port
    min_bytes = min_io_bytes(graph, read_bytes, written_bytes)
    memory = min_bytes / target.hbm_bytes_per_s * 1e9
    roofline = max(tot.compute_ns, memory)
    return Estimate(
        scheduled_ns=scheduled,
        lower_bound_ns=lower,
        serial_ns=serial,
        roofline_ns=roofline,
        ratio=scheduled / roofline if roofline else float("inf"),
        by_engine_ns=by_engine,
        by_resource_ns=resources,
        by_op_ns=dict(sorted(tot.by_op.items())),
        compute_roofline_ns=tot.compute_ns,
        memory_roofline_ns=memory,
        dma_transfer_ns=transfer,
        dma_issue_ns=issue,
        dependency_ns=sched.dependency_ns,
        flops=tot.flops,
        dma_bytes=tot.dma_bytes,
        min_hbm_bytes=min_bytes,
        instructions=tot.count,
    )
