"""SBUF bytes per partition and PSUM banks in use over the kernel's program order (each loop
body once, as written), as inline SVG step charts against the target's capacity."""

from __future__ import annotations

import html

from ..ir.graph import Block, Graph
from ..nki.ops import AllocOp, DeallocOp, ForiLoopOp
from ..nki.target import Target
from ..nki.types import MemorySpace, TileType


def occupancy(nki: Graph) -> list[tuple[int, int, str]]:
    """(SBUF bytes/partition, PSUM banks, op label) after each op in program order."""
    live: dict[int, tuple[str, int]] = {}  # alloc result id -> (space, amount)
    sbuf = psum = 0
    out: list[tuple[int, int, str]] = []

    def walk(block: Block) -> None:
        nonlocal sbuf, psum
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.body)
                continue
            if isinstance(op, AllocOp) and isinstance(op.result.type, TileType):
                t = op.result.type
                if t.space is MemorySpace.PSUM:
                    live[id(op.result)] = ("psum", op.bufs)
                    psum += op.bufs
                else:
                    live[id(op.result)] = ("sbuf", t.bytes_per_partition * op.bufs)
                    sbuf += t.bytes_per_partition * op.bufs
            elif isinstance(op, DeallocOp):
                space, n = live.pop(id(op.operand(0)), ("", 0))
                if space == "psum":
                    psum -= n
                elif space == "sbuf":
                    sbuf -= n
            else:
                continue
            out.append((sbuf, psum, op.loc or op.name))

    walk(nki.body)
    return out


def _chart(points: list[tuple[int, str]], cap: int, unit: str, title: str) -> str:
    w, h, pad = 760, 150, 40
    n = max(len(points), 1)
    top = max([cap] + [p for p, _ in points]) or 1
    x = lambda i: pad + (w - 2 * pad) * i / n  # noqa: E731
    y = lambda v: h - 20 - (h - 40) * v / top  # noqa: E731
    path = [f"M{x(0):.1f},{y(0):.1f}"]
    prev = 0
    for i, (v, _) in enumerate(points):
        path.append(f"L{x(i):.1f},{y(prev):.1f}L{x(i):.1f},{y(v):.1f}")
        prev = v
    path.append(f"L{x(n):.1f},{y(prev):.1f}")
    peak = max((p for p, _ in points), default=0)
    marks = "".join(
        f'<rect x="{x(i):.1f}" y="{y(v):.1f}" width="{max((w - 2 * pad) / n, 1):.1f}" '
        f'height="{h - 20 - y(v):.1f}" class="hit"><title>{html.escape(lbl)}: {v:,} {unit}</title></rect>'
        for i, (v, lbl) in enumerate(points)
    )
    return (
        f'<svg class="chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img">'
        f'<text x="{pad}" y="14" class="t">{html.escape(title)}: peak {peak:,} of {cap:,} {unit}</text>'
        f'<line x1="{pad}" x2="{w - pad}" y1="{y(cap):.1f}" y2="{y(cap):.1f}" class="cap"/>'
        f'<line x1="{pad}" x2="{w - pad}" y1="{h - 20}" y2="{h - 20}" class="axis"/>'
        f'<path d="{"".join(path)}" class="occ"/>{marks}'
        f'<text x="{pad}" y="{h - 5}" class="a">program order '
        f"({len(points)} allocs/deallocs; loop bodies once)</text>"
        "</svg>"
    )


def occupancy_svg(nki: Graph, target: Target) -> str:
    pts = occupancy(nki)
    return _chart(
        [(s, lbl) for s, _, lbl in pts], target.sbuf_bytes_per_partition, "B/partition", "SBUF"
    ) + _chart([(p, lbl) for _, p, lbl in pts], target.psum_num_banks, "banks", "PSUM")
