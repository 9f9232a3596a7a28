"""Structural copy of a graph: what ``parse(str(graph))`` gives, without printing or parsing.

Every op is rebuilt through its generic constructor with the same attributes, result types,
location and regions; every value gets the name the printer gives it as its hint (numbered
values get none), exactly as the parser names them. The copy's values belong to no builder, so
Python operators on them never add ops to the original's builder.
"""

from __future__ import annotations

from .graph import Block, Graph, Region
from .op import Op
from .printer import Printer
from .value import Value


def clone_graph(graph: Graph) -> Graph:
    """A new Graph equal to ``parse(str(graph))`` (same text when printed), sharing nothing
    mutable with ``graph``."""
    names = Printer(graph).names
    new = Graph(graph.name)
    vmap: dict[Value, Value] = {}
    args = graph.body.args
    for name, v in zip(graph.input_names, args):
        vmap[v] = new.add_input(name, v.type)
    for v in args[len(graph.input_names) :]:
        vmap[v] = new.body.add_arg(v.type, _hint(names, v))
    _clone_block(graph.body, new.body, vmap, names)
    return new


def _hint(names: dict[Value, str], v: Value) -> str | None:
    n = names.get(v)
    return None if n is None or n.isdigit() else n


def _clone_block(src: Block, dst: Block, vmap: dict[Value, Value], names) -> None:
    for op in src:
        dst.append(_clone_op(op, vmap, names))


def _clone_op(op: Op, vmap: dict[Value, Value], names) -> Op:
    regions = []
    for r in op.regions:
        blocks = []
        for b in r.blocks:
            nb = Block([a.type for a in b.args], [_hint(names, a) for a in b.args])
            for a, na in zip(b.args, nb.args):
                vmap[a] = na
            _clone_block(b, nb, vmap, names)
            blocks.append(nb)
        regions.append(Region(blocks))
    new = type(op)([vmap[v] for v in op.operands], dict(op.attrs), [r.type for r in op.results], regions)
    new.loc = op.loc
    for r, nr in zip(op.results, new.results):
        nr.name_hint = _hint(names, r)
        vmap[r] = nr
    return new


def clone_op(op: Op, vmap: dict[Value, Value]) -> Op:
    """A copy of ``op`` (with its regions) reading ``vmap[v]`` for each operand ``v``; its
    results (and those of the ops inside) are added to ``vmap`` and keep their name hints."""
    names = {v: v.name_hint for v in vmap if v.name_hint}
    for inner in op.walk():
        for r in inner.results:
            if r.name_hint:
                names[r] = r.name_hint
    return _clone_op(op, vmap, _HintNames(names))


class _HintNames(dict):
    """A name table answering None for values without a hint (block args, loop indices)."""

    def get(self, v, default=None):
        return super().get(v, default)
