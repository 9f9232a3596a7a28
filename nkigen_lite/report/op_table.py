"""Per source op: the NKI instructions made from it (static and executed), the DMA bytes they
move and the cost model's modelled time (``Estimate.by_op_ns``), keyed by the instructions'
``loc`` as the cost model keys them."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import Block, Graph
from ..nki.ops import DmaCopyOp, ForiLoopOp
from ..perf.instruction_cost import FREE_OPS


@dataclass
class OpRow:
    """One row: the loc label, instruction counts, DMA bytes (executed) and modelled ns."""

    label: str
    static: int = 0
    executed: int = 0
    dma_bytes: int = 0
    modelled_ns: float = 0.0


def op_rows(nki: Graph, by_op_ns: dict[str, float]) -> list[OpRow]:
    """Rows in order of first appearance in the kernel."""
    rows: dict[str, OpRow] = {}

    def walk(block: Block, mult: int) -> None:
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.body, mult * op.trip_count)
                continue
            if isinstance(op, FREE_OPS) or not op.name.startswith("nki."):
                continue
            key = op.loc or op.name
            r = rows.setdefault(key, OpRow(key))
            r.static += 1
            r.executed += mult
            if isinstance(op, DmaCopyOp):
                dst = op.access("dst")
                r.dma_bytes += mult * dst.size * dst.dtype.itemsize

    walk(nki.body, 1)
    for key, ns in by_op_ns.items():
        rows.setdefault(key, OpRow(key)).modelled_ns = ns
    return list(rows.values())
