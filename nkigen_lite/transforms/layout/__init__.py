"""The ``layout`` pass: I/P/F roles for every dim of every value (``ctx.get(LayoutAnalysis)``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.graph import Graph
from ...ir.passes import Pass, PassContext
from ...nki.target import TRN2
from .analysis import LayoutAnalysis
from .ops import LayoutConvertOp
from .solver import LayoutSolver, solve_layout


@dataclass(frozen=True)
class Layout(Pass):
    """Solve the layout (knobs from ``ctx.knobs``: {value name: {partition_dim, tile_size}})
    and record the LayoutAnalysis in ``ctx``."""

    name = "layout"

    def run(self, graph: Graph, ctx: PassContext) -> None:
        target = ctx.target if ctx.target is not None else TRN2
        ctx.record(solve_layout(graph, target.num_partitions, ctx.knobs))


__all__ = ["Layout", "LayoutAnalysis", "LayoutConvertOp", "LayoutSolver", "solve_layout"]
