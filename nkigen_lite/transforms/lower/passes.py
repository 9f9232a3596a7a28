"""The ``lower`` pass: tensor graph -> NKI kernel graph (uses the ``layout`` analysis if present)."""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.graph import Graph
from ...ir.passes import Pass, PassContext
from ...nki.target import TRN2
from .driver import lower_to_nki


@dataclass(frozen=True)
class LowerToNki(Pass):
    """Lower fusion groups, matmuls and data movement to NKI IR; constants go to
    ``ctx.analyses["constants"]`` as extra kernel inputs, empty outputs (produced without the
    kernel) to ``ctx.analyses["empty_outputs"]``."""

    name = "lower"

    def run(self, graph: Graph, ctx: PassContext) -> Graph:
        layout = ctx.analyses.get("layout")
        nki_graph, constants, empty = lower_to_nki(graph, ctx.target or TRN2, layout)
        ctx.analyses["constants"] = constants
        ctx.analyses["empty_outputs"] = empty
        return nki_graph
