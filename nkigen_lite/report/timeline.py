"""The cost model's schedule (perf/schedule.py: the first iterations of every loop, before it
extrapolates the steady state) as an inline SVG timeline, one row per engine and one for the DMA
transfers."""

from __future__ import annotations

import html

from ..ir.graph import Graph
from ..nki.target import Target
from ..perf.schedule import Scheduler

ROWS = ("tensor", "vector", "scalar", "gpsimd", "dma")
MAX_BARS = 4000  # a report stays small; the rest is summarised in the caption


def scheduled(nki: Graph, target: Target) -> list[tuple[str, float, float, str]]:
    """(engine, start ns, end ns, op label) of every scheduled instruction, in schedule order."""
    sched = Scheduler(target, {}, trace=True)
    sched.run(nki.body)
    return [(sched.costs[id(op)].engine, s, e, op.loc or op.name) for op, s, e in sched.trace]


def timeline_svg(nki: Graph, target: Target) -> str:
    bars = scheduled(nki, target)
    shown = bars[:MAX_BARS]
    end = max((e for _, _, e, _ in shown), default=1.0) or 1.0
    w, row_h, left = 760, 22, 70
    h = row_h * len(ROWS) + 30
    x = lambda t: left + (w - left - 10) * t / end  # noqa: E731
    out = [f'<svg class="chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img">']
    for r, eng in enumerate(ROWS):
        out.append(f'<text x="4" y="{r * row_h + 15}" class="a">{eng}</text>')
    for eng, s, e, lbl in shown:
        r = ROWS.index(eng) if eng in ROWS else len(ROWS) - 1
        out.append(
            f'<rect x="{x(s):.2f}" y="{r * row_h + 3}" width="{max(x(e) - x(s), 0.5):.2f}" '
            f'height="{row_h - 6}" class="e-{eng}"><title>{html.escape(lbl)} on {eng}: '
            f"{s:,.0f}-{e:,.0f} ns</title></rect>"
        )
    more = f"; first {MAX_BARS} of {len(bars)} shown" if len(bars) > MAX_BARS else ""
    out.append(
        f'<text x="{left}" y="{h - 8}" class="a">0 to {end:,.0f} ns: {len(bars)} scheduled '
        f"instructions (loops: first iterations, before the steady state is extrapolated){more}</text>"
    )
    out.append("</svg>")
    return "".join(out)
