"""Deterministic MLIR-like text printer shared by every dialect.

    graph @softmax(%x: tensor<256x512xf32>) {
      %m = tensor.reduce %x {axes = [1], kind = max, keepdims = true} : tensor<256x1xf32>
      nki.fori_loop {lower = 0, upper = 2, step = 1} (%i: index) {
        ...
      }
      return y = %m
    }

Value names come from hints (made unique with ``_1``, ``_2`` ...) or are numbered in order
of definition, so the same graph always prints the same text and printed text re-parses to a
graph that prints identically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .attrs import DENSE, FrozenArray, quote_string
from .value import Value

if TYPE_CHECKING:
    from .graph import Block, Graph
    from .op import Op

INDENT = "  "
ELIDE_DENSE_BYTES = 256  # human-facing text shows dense constants up to this size in full


class Printer:
    """Assigns value names for one graph (or a detached op) and formats ops with them."""

    def __init__(self, graph: Graph | None = None, root_ops=(), elide_dense: int | None = None):
        self.elide_dense = elide_dense  # dense attributes over this many bytes print elided
        self.names: dict[Value, str] = {}
        self._taken: set[str] = set()
        self._suffix: dict[str, int] = {}  # per hint: the last suffix tried (they only grow)
        self._counter = 0
        if graph is not None:
            for n, v in zip(graph.input_names, graph.body.args):
                self._assign(v, n)
            for v in graph.body.args[len(graph.input_names) :]:
                self._assign(v)
            for op in graph.body:
                self._name_op(op)
        for op in root_ops:
            self._name_op(op)

    def _assign(self, v: Value, hint: str | None = None) -> None:
        if v in self.names:
            return
        hint = hint or v.name_hint
        if hint:
            cand, k = hint, self._suffix.get(hint, 0)
            if k:
                cand = f"{hint}_{k}"
            while cand in self._taken:
                k += 1
                cand = f"{hint}_{k}"
            self._suffix[hint] = k
        else:
            cand = str(self._counter)
            self._counter += 1
        self._taken.add(cand)
        self.names[v] = cand

    def _name_op(self, op: Op) -> None:
        for r in op.results:
            self._assign(r)
        for region in op.regions:
            for b in region.blocks:
                for a in b.args:
                    self._assign(a)
                for inner in b:
                    self._name_op(inner)

    def name(self, v: Value) -> str:
        n = self.names.get(v)
        if n is None:  # a value not defined in this graph (only in broken IR)
            return f"%<undefined:{v.name_hint or '?'}>"
        return "%" + n

    def format_attrs(self, op: Op, skip: tuple[str, ...] = ()) -> str:
        """``{a = 1, b = [2, 3]}`` with attributes in declaration order, defaults omitted."""
        items = []
        for a in op.attr_spec:
            if a.name in skip:
                continue
            v = op.attrs.get(a.name)
            if not a.required and _same(v, a.default):
                continue
            if (
                self.elide_dense is not None
                and isinstance(v, FrozenArray)
                and v.array.nbytes > self.elide_dense
            ):
                items.append(f"{a.name} = {DENSE.format_elided(v)}")
            else:
                items.append(f"{a.name} = {a.kind.format(v)}")
        return "{" + ", ".join(items) + "}" if items else ""

    def format_op(self, op: Op, indent: int = 0) -> list[str]:
        pad = INDENT * indent
        head = ""
        if op.results:
            head = ", ".join(self.name(r) for r in op.results) + " = "
        body = op.format_body(self)
        line = f"{pad}{head}{op.name}" + (f" {body}" if body else "")
        if op.results:
            line += " : " + ", ".join(str(r.type) for r in op.results)
        if op.loc:
            line += f" loc({quote_string(op.loc)})"
        lines = [line]
        for region in op.regions:
            for b in region.blocks:
                lines[-1] += " (" + ", ".join(f"{self.name(a)}: {a.type}" for a in b.args) + ") {"
                lines.extend(self.format_block(b, indent + 1))
                lines.append(pad + "}")
        return lines

    def format_block(self, block: Block, indent: int) -> list[str]:
        out = []
        for op in block:
            out.extend(self.format_op(op, indent))
        return out


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b


def print_graph(graph: Graph, elide_dense: int | None = None) -> str:
    """The whole graph as text (ends with a newline). With ``elide_dense``, dense constants over
    that many bytes print as ``dense<SHAPExDTYPE, __elided__>`` (for people; it does not parse)."""
    p = Printer(graph, elide_dense=elide_dense)
    args = ", ".join(f"{p.name(v)}: {v.type}" for v in graph.body.args)
    lines = [f"graph @{graph.name}({args}) {{"]
    lines.extend(p.format_block(graph.body, 1))
    lines.append("}")
    return "\n".join(lines) + "\n"


def root_graph(op: Op):
    """The Graph containing ``op``, or None when it is detached."""
    from .graph import Graph

    cur = op
    while cur is not None:
        block = cur.parent
        if block is None or block.parent is None:
            return None
        owner = block.parent.parent
        if isinstance(owner, Graph):
            return owner
        cur = owner
    return None


def format_op(op: Op) -> str:
    """One op as text (its regions included), named consistently with its graph."""
    g = root_graph(op)
    p = (
        Printer(g, elide_dense=ELIDE_DENSE_BYTES)
        if g is not None
        else Printer(root_ops=[op], elide_dense=ELIDE_DENSE_BYTES)
    )
    for v in op.operands:
        p._assign(v)
    return "\n".join(p.format_op(op))
