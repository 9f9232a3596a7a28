"""KernelStats: instruction counts per engine (static and executed), DMA count and bytes, HBM
traffic against the minimum, and peak on-chip memory per partition.

``dma_bytes`` counts what each DMA moves as the hardware moves it (a stride-0 broadcast of n
bytes onto p partitions moves n*p bytes); ``hbm_bytes`` counts the bytes each DMA reads from or
writes to HBM (both sides of an HBM -> HBM copy); ``min_hbm_bytes`` is the size of every kernel
output and of the part of every input the program must read (``min_io_bytes``; an output
aliasing an input counts once: it is that buffer, and only the bytes a pure in-place update
writes of it);
``hbm_traffic_ratio = hbm_bytes / min_hbm_bytes``. A collective counts its source and
destination in ``hbm_bytes`` and what the rank sends in ``collective_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.graph import Block, Graph
from ..nki.ops import AllocOp, CollectiveOp, DmaCopyOp, DmaGatherOp, ForiLoopOp, HbmViewOp
from ..nki.ops.base import NkiOp
from ..nki.target import TRN2, Target
from ..nki.types import HbmType
from ..nki.verify import verify


@dataclass(frozen=True)
class KernelStats:
    """Counts describing one NKI kernel (field names are a public contract)."""

    instructions_static: int
    instructions_dynamic: int
    static_by_engine: dict = field(default_factory=dict)
    dynamic_by_engine: dict = field(default_factory=dict)
    dma_count: int = 0
    dma_bytes: int = 0
    hbm_bytes: int = 0
    min_hbm_bytes: int = 0
    hbm_traffic_ratio: float = 0.0
    peak_sbuf_bytes: int = 0
    peak_psum_bytes: int = 0
    collective_count: int = 0  # executed collectives
    collective_bytes: int = 0  # bytes this rank sends in them (ring algorithms)
    hbm_spills: int = 0  # HBM scratch buffers of the lowering's last resort ("spill<N>")

    def summary(self) -> str:
        """A few human-readable lines."""
        eng = ", ".join(f"{k} {v:,}" for k, v in sorted(self.dynamic_by_engine.items()))
        return (
            f"instructions: {self.instructions_static:,} static, "
            f"{self.instructions_dynamic:,} executed ({eng})\n"
            f"DMA: {self.dma_count:,} transfers, {self.dma_bytes:,} B moved; HBM traffic "
            f"{self.hbm_bytes:,} B = {self.hbm_traffic_ratio:.3f} x minimum "
            f"({self.min_hbm_bytes:,} B)\n"
            f"peak per partition: SBUF {self.peak_sbuf_bytes:,} B, PSUM {self.peak_psum_bytes:,} B"
            + (f"\nHBM spills: {self.hbm_spills}" if self.hbm_spills else "")
        )


def _gathered_bytes(graph: Graph) -> dict:
    """Bytes indirect gathers read from each kernel input that is read only by them (through
    reshape views or directly): such a table need not be read whole."""
    acc: dict = {}

    def walk(block: Block, mult: int) -> None:
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.regions[0].block, mult * _trips(op))
            elif isinstance(op, DmaGatherOp):
                root = op.access("src").tensor
                if isinstance(root.defining_op, HbmViewOp):
                    root = root.defining_op.operand(0)
                acc[root] = acc.get(root, 0) + mult * op.moved.size * root.type.dtype.itemsize

    def gather_src(v, op) -> bool:
        return isinstance(op, DmaGatherOp) and op.access("src").tensor is v

    def only_gathered(v) -> bool:
        for u in v.uses:
            op = u.op
            if isinstance(op, HbmViewOp):
                if not all(gather_src(op.result, w.op) for w in op.result.uses):
                    return False
            elif not gather_src(v, op):
                return False
        return True

    walk(graph.body, 1)
    return {v: n for v, n in acc.items() if v in set(graph.inputs) and only_gathered(v)}


def min_io_bytes(graph: Graph, read_bytes: dict | None = None, written_bytes: dict | None = None) -> int:
    """The HBM bytes any kernel computing this graph must move: every output once, and every
    input once, except that an input named in ``read_bytes`` (``{name: bytes}``, what the
    source program selects of it: ``read_footprint.input_read_bytes``) counts those bytes, and
    without it a table read only by indirect gathers counts the rows they read (at most its
    size). An output aliasing an input counts whole, once, unless ``written_bytes`` (``{input
    name: bytes}``, ``inplace_footprint.inplace_written_bytes``) names it: a pure in-place
    update moves only what it writes."""
    gathered = _gathered_bytes(graph)
    names = dict(zip(graph.inputs, graph.input_names))
    outs = set(graph.outputs.values())
    io = list(dict.fromkeys([*graph.inputs, *graph.outputs.values()]))
    total = 0
    for v in io:
        full = v.type.size * v.type.dtype.itemsize
        if written_bytes is not None and names.get(v) in written_bytes:
            total += min(full, written_bytes[names[v]])
        elif v not in outs and read_bytes is not None and names.get(v) in read_bytes:
            total += min(full, read_bytes[names[v]])
        else:
            total += min(full, gathered[v]) if v in gathered else full
    return total


def _engine_of(op) -> str:
    if isinstance(op, CollectiveOp):
        return "collective"
    return "dma" if isinstance(op, DmaCopyOp) else op.attrs["engine"]


def _trips(loop: ForiLoopOp) -> int:
    lo, hi, st = loop.attrs["lower"], loop.attrs["upper"], loop.attrs["step"]
    return max(0, -(-(hi - lo) // st))


def kernel_stats(
    graph: Graph, target: Target = TRN2, read_bytes: dict | None = None, written_bytes: dict | None = None
) -> KernelStats:
    """Count the instructions and DMA traffic of an NKI kernel graph (verifying it);
    ``read_bytes`` and ``written_bytes`` as ``min_io_bytes`` takes them."""
    peaks = verify(graph, target)
    acc = {
        "static": {},
        "dynamic": {},
        "dma_count": 0,
        "dma_bytes": 0,
        "hbm_bytes": 0,
        "cc": 0,
        "cc_bytes": 0,
        "spills": 0,
    }

    def walk(block: Block, mult: int) -> None:
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.regions[0].block, mult * _trips(op))
                continue
            if isinstance(op, AllocOp) and isinstance(op.result.type, HbmType):
                acc["spills"] += (op.result.name_hint or "").startswith("spill")
            if not isinstance(op, NkiOp):
                continue
            e = _engine_of(op)
            acc["static"][e] = acc["static"].get(e, 0) + 1
            acc["dynamic"][e] = acc["dynamic"].get(e, 0) + mult
            if isinstance(op, DmaCopyOp):
                dst, src = op.access("dst"), op.access("src")
                n = op.moved.size
                acc["dma_count"] += mult
                acc["dma_bytes"] += mult * n * dst.dtype.itemsize
                for a in (dst, src):
                    if isinstance(a.tensor.type, HbmType):
                        acc["hbm_bytes"] += mult * n * a.dtype.itemsize
            elif isinstance(op, CollectiveOp):  # reads its source, writes its destination
                dst, src = op.access("dst"), op.access("src")
                acc["cc"] += mult
                acc["cc_bytes"] += mult * op.wire_bytes()
                acc["hbm_bytes"] += mult * (dst.size + src.size) * dst.dtype.itemsize

    walk(graph.body, 1)
    # each kernel tensor once: an output aliasing an input (updated in place) is that input
    min_bytes = min_io_bytes(graph, read_bytes, written_bytes)
    return KernelStats(
        instructions_static=sum(acc["static"].values()),
        instructions_dynamic=sum(acc["dynamic"].values()),
        static_by_engine=dict(sorted(acc["static"].items())),
        dynamic_by_engine=dict(sorted(acc["dynamic"].items())),
        dma_count=acc["dma_count"],
        dma_bytes=acc["dma_bytes"],
        hbm_bytes=acc["hbm_bytes"],
        min_hbm_bytes=min_bytes,
        hbm_traffic_ratio=acc["hbm_bytes"] / min_bytes if min_bytes else 0.0,
        peak_sbuf_bytes=peaks.sbuf_bytes,
        peak_psum_bytes=peaks.psum_banks * target.psum_bank_bytes,
        collective_count=acc["cc"],
        collective_bytes=acc["cc_bytes"],
        hbm_spills=acc["spills"],
    )
