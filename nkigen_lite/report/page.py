"""Assemble the report page: one HTML file, styles inline, no script, no external reference.
The same kernel gives the same bytes (no time stamps, no ids from memory addresses)."""

from __future__ import annotations

import html
import os

from .. import __version__
from .ir_view import definitions, render_stage
from .locs import parse_loc, python_anchor
from .occupancy import occupancy_svg
from .op_table import op_rows
from .sources import find_source
from .timeline import timeline_svg

LOWERING_INPUT = "layout"  # the stage whose IR the lowering reads: NKI locs name its values

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px;color:#222}
h1{font-size:22px}h2{font-size:17px;border-bottom:1px solid #ccc;margin-top:28px}
pre.ir,pre.src{font:12px/1.35 ui-monospace,monospace;background:#f7f7f7;padding:8px;overflow-x:auto}
.l{display:block}.l:target{background:#ffe79a}.n{display:inline-block;width:3.5em;color:#999;
text-align:right;margin-right:1em;user-select:none}.links a{margin-left:.6em;font-size:11px}
a.op{color:#0a5}a.py{color:#a50}table{border-collapse:collapse;font-size:12px}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
td:first-child,th:first-child{text-align:left}pre.sum{white-space:pre-wrap}
.warn{background:#fff3f0;border-left:4px solid #d40;padding:4px 8px;margin:4px 0}
.chart .t{font:bold 12px sans-serif}.chart .a{font:11px sans-serif;fill:#555}
.occ{fill:none;stroke:#36c;stroke-width:1.5}.cap{stroke:#d40;stroke-dasharray:4 3}
.axis{stroke:#999}.hit{fill:transparent}.hit:hover{fill:#36c3}
.e-tensor{fill:#4a7}.e-vector{fill:#36c}.e-scalar{fill:#c63}.e-gpsimd{fill:#a5c}.e-dma{fill:#888}
.hot{background:#ffe79a}summary{cursor:pointer;font-weight:600}
"""


def _summary(kernel) -> str:
    st, est = kernel.stats(), kernel.estimate()
    return (
        f'<pre class="sum">{html.escape(st.summary())}\n{html.escape(est.summary())}</pre>'
        f"<p>inputs: {html.escape(', '.join(kernel.input_names))}; "
        f"outputs: {html.escape(', '.join(kernel.output_names))}; "
        f"target {html.escape(kernel.target.name)}</p>"
    )


def _warnings(kernel) -> str:
    ws = kernel.warnings()
    if not ws:
        return (
            "<p>No performance warnings (scheduled time within 3x the roofline, "
            "HBM traffic within 2x the minimum).</p>"
        )
    return "".join(f'<div class="warn">{html.escape(str(w))}</div>' for w in ws)


def _label_cell(label: str, defs: dict[str, int]) -> str:
    p = parse_loc(label)
    out = html.escape(label)
    if p is not None and p.value in defs:
        out = f'<a class="op" href="#ir-{LOWERING_INPUT}-{defs[p.value]}">{out}</a>'
    if p is not None and p.python is not None:
        f, ln = p.python
        out += f' <a class="py" href="#{python_anchor(f, ln)}">{html.escape(f)}:{ln}</a>'
    return out


def _op_table(kernel, defs: dict[str, int]) -> str:
    est = kernel.estimate()
    rows = op_rows(kernel.nki, est.by_op_ns)
    total = sum(r.modelled_ns for r in rows) or 1.0
    body = "".join(
        f"<tr><td>{_label_cell(r.label, defs)}</td><td>{r.static}</td><td>{r.executed:,}</td>"
        f"<td>{r.dma_bytes:,}</td><td>{r.modelled_ns:,.0f}</td>"
        f"<td>{100 * r.modelled_ns / total:.1f}%</td></tr>"
        for r in rows
    )
    return (
        "<table><tr><th>source op (NKI loc)</th><th>instructions</th><th>executed</th>"
        "<th>DMA bytes</th><th>modelled ns</th><th>share</th></tr>" + body + "</table>"
    )


def _python_lines(stage_texts: dict[str, str]) -> dict[str, set[int]]:
    from .ir_view import line_locs

    used: dict[str, set[int]] = {}
    for text in stage_texts.values():
        for loc in line_locs(text):
            p = parse_loc(loc)
            if p is not None and p.python is not None:
                used.setdefault(p.python[0], set()).add(p.python[1])
    return used


def _sources(used: dict[str, set[int]], paths) -> str:
    if not used:
        return "<p>No op carries a Python location (the kernel was not traced from Python).</p>"
    parts = []
    for file in sorted(used):
        lines = sorted(used[file])
        src = find_source(file, paths)
        rows = []
        if src is None:
            for ln in lines:
                rows.append(
                    f'<span class="l hot" id="{python_anchor(file, ln)}"><span class="n">{ln}</span>'
                    "(source not found)</span>"
                )
        else:
            lo, hi = max(1, lines[0] - 3), min(len(src), lines[-1] + 3)
            for ln in range(lo, hi + 1):
                cls = "l hot" if ln in used[file] else "l"
                text = html.escape(src[ln - 1].rstrip("\n"))
                rows.append(
                    f'<span class="{cls}" id="{python_anchor(file, ln)}">'
                    f'<span class="n">{ln}</span>{text}</span>'
                )
        parts.append(f'<h3>{html.escape(file)}</h3><pre class="src">' + "\n".join(rows) + "</pre>")
    return "".join(parts)


def report_html(kernel, source_paths=()) -> str:
    """The report of a compiled ``Kernel`` as one HTML document (a str). ``source_paths``: Python
    files to look in first for the lines the ops' locations name."""
    from ..compiler import STAGES

    texts = {stage: kernel.ir(stage) for stage in STAGES}
    defs = definitions(texts[LOWERING_INPUT])
    stages = []
    after_lowering = False
    for stage in STAGES:
        after_lowering = after_lowering or stage == "lower"
        op_stage = LOWERING_INPUT if after_lowering else None
        title = "nki (final kernel)" if stage == STAGES[-1] else stage
        opened = " open" if stage == STAGES[-1] else ""
        stages.append(
            f'<details id="stage-{stage}"{opened}><summary>after {html.escape(title)}</summary>'
            + render_stage(stage, texts[stage], op_stage, defs if op_stage else {})
            + "</details>"
        )
    name = html.escape(kernel.name)
    k_nki, tgt = kernel.nki, kernel.target
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>nkigen_lite report: {name}</title><style>{_CSS}</style></head><body>"
        f"<h1>Kernel <code>{name}</code></h1><p>nkigen_lite {html.escape(__version__)}</p>"
        f'{_summary(kernel)}<h2 id="warnings">Performance warnings</h2>{_warnings(kernel)}'
        f'<h2 id="ops">Per source op</h2>{_op_table(kernel, defs)}'
        f'<h2 id="memory">On-chip memory over program order</h2>{occupancy_svg(k_nki, tgt)}'
        f'<h2 id="timeline">Engine timeline (cost model schedule)</h2>{timeline_svg(k_nki, tgt)}'
        f'<h2 id="ir">IR after every stage</h2>{"".join(stages)}'
        f'<h2 id="python">Python source</h2>{_sources(_python_lines(texts), source_paths)}'
        "</body></html>\n"
    )


def write_report(kernel, path, source_paths=()) -> str:
    """Write the report to ``path`` whole (a temporary name, then renamed); returns the path."""
    path = os.fspath(path)
    text = report_html(kernel, source_paths)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return path
