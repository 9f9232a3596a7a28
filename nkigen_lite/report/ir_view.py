"""The IR text of every stage as HTML: numbered lines with anchors; an op's ``loc`` becomes
links to the tensor op it came from (NKI ops) and to the user's Python line."""

from __future__ import annotations

import html
import re

from .locs import ir_anchor, parse_loc, python_anchor

_LOC = re.compile(r'\sloc\("((?:[^"\\]|\\.)*)"\)')
_DEFS = re.compile(r"^\s*(?P<names>%[\w.$-]+(?:\s*,\s*%[\w.$-]+)*)\s*=")
_GRAPH = re.compile(r"^graph @[\w.$-]+\((?P<params>.*)\)")
_PARAM = re.compile(r"(%[\w.$-]+)\s*:")
_INDEX = re.compile(r"\(%[\w.$-]+: index\)")


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)


def definitions(text: str) -> dict[str, int]:
    """Value name -> 1-based line defining it (graph parameters: the graph's line)."""
    out: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        g = _GRAPH.match(line)
        if g:
            for name in _PARAM.findall(g.group("params")):
                out.setdefault(name, n)
            continue
        m = _DEFS.match(line)
        if m:
            for name in m.group("names").split(","):
                out.setdefault(name.strip(), n)
    return out


def line_locs(text: str) -> list[str | None]:
    """The ``loc`` label of every line (None when it has none)."""
    out = []
    for line in text.splitlines():
        m = _LOC.search(line)
        out.append(_unquote(m.group(1)) if m else None)
    return out


def render_stage(stage: str, text: str, op_stage: str | None, op_defs: dict[str, int]) -> str:
    """``<pre>`` of one stage. ``op_stage``/``op_defs``: where a loc's tensor value is defined
    (the IR the lowering read), for the link from an NKI instruction to its tensor op."""
    rows = []
    for n, (line, loc) in enumerate(zip(text.splitlines(), line_locs(text)), 1):
        links = []
        p = parse_loc(loc)
        if p is not None and op_stage is not None and p.value in op_defs and p.tensor_op:
            href = ir_anchor(op_stage, op_defs[p.value])
            links.append(f'<a class="op" href="#{href}">{html.escape(p.tensor_op + " " + p.value)}</a>')
        elif p is not None and op_stage is not None and p.value in op_defs:
            href = ir_anchor(op_stage, op_defs[p.value])
            links.append(f'<a class="op" href="#{href}">{html.escape(p.value)}</a>')
        if p is not None and p.python is not None:
            f, ln = p.python
            links.append(f'<a class="py" href="#{python_anchor(f, ln)}">{html.escape(f)}:{ln}</a>')
        tail = f' <span class="links">{" ".join(links)}</span>' if links else ""
        rows.append(
            f'<span class="l" id="{ir_anchor(stage, n)}"><span class="n">{n}</span>'
            f"{html.escape(line)}{tail}</span>"
        )
    return '<pre class="ir">' + "\n".join(rows) + "</pre>"
