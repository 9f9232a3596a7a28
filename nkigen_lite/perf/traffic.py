"""HBM traffic per tensor: which HBM tensors an NKI kernel's DMAs read and write, how many
bytes each, and on behalf of which source op.

``hbm_traffic(graph)`` walks the kernel (loop trip counts included) and charges every DMA's
HBM side to the root tensor of its access (through ``hbm_view`` ops): a kernel input or output
by its name, an HBM scratch buffer by its name hint (``scratch3``, ``spill0``). Rows are keyed
by (tensor, "read" / "write", source op location). The sum of all rows is
``KernelStats.hbm_bytes`` minus collectives (which ``kernel_stats`` counts separately).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import Block, Graph
from ..nki.ops import DmaCopyOp, ForiLoopOp, HbmViewOp
from ..nki.types import HbmType


@dataclass(frozen=True)
class TrafficRow:
    """Bytes one source op's DMAs read from or write to one HBM tensor."""

    tensor: str
    direction: str  # "read" or "write"
    source: str  # the NKI ops' loc (the tensor op they implement), "" when unknown
    nbytes: int


def _root(v):
    while isinstance(v.defining_op, HbmViewOp):
        v = v.defining_op.operand(0)
    return v


def hbm_traffic(graph: Graph) -> list[TrafficRow]:
    """Per (HBM tensor, direction, source op) the bytes moved, largest first (ties by name)."""
    names = {v: n for n, v in zip(graph.input_names, graph.inputs)}
    for n, v in graph.outputs.items():
        names.setdefault(v, n)
    acc: dict[tuple, int] = {}

    def walk(block: Block, mult: int) -> None:
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.body, mult * op.trip_count)
                continue
            if not isinstance(op, DmaCopyOp):
                continue
            n = op.moved.size
            for side, direction in (("src", "read"), ("dst", "write")):
                a = op.access(side)
                if isinstance(a.tensor.type, HbmType):
                    r = _root(a.tensor)
                    key = (names.get(r) or r.name_hint or "?", direction, str(op.loc or ""))
                    acc[key] = acc.get(key, 0) + mult * n * a.dtype.itemsize

    walk(graph.body, 1)
    rows = [TrafficRow(t, d, s, n) for (t, d, s), n in acc.items()]
    return sorted(rows, key=lambda r: (-r.nbytes, r.tensor, r.direction, r.source))


def bytes_by_tensor(graph: Graph) -> dict[str, dict[str, int]]:
    """{tensor name: {"read": bytes, "write": bytes}} over the whole kernel."""
    out: dict[str, dict[str, int]] = {}
    for r in hbm_traffic(graph):
        d = out.setdefault(r.tensor, {"read": 0, "write": 0})
        d[r.direction] += r.nbytes
    return out


def traffic_table(graph: Graph, limit: int | None = None) -> str:
    """A plain-text table of ``hbm_traffic`` (the ``limit`` largest rows)."""
    rows = hbm_traffic(graph)[:limit]
    lines = [f"{'bytes':>12}  {'tensor':<12} {'dir':<5} source"]
    lines += [f"{r.nbytes:>12,}  {r.tensor:<12} {r.direction:<5} {r.source}" for r in rows]
    return "\n".join(lines)
