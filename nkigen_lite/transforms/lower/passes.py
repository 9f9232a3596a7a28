"""The ``lower`` pass: tensor graph -> NKI kernel graph (uses the ``layout`` analysis if present)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.graph import Graph
from ...ir.passes import Pass, PassContext
from ...nki.target import TRN2
from ..layout.analysis import LayoutAnalysis
from .driver import lower_to_nki


@dataclass(frozen=True)
class KernelExtras:
    """What the ``lower`` pass hands the Kernel beside the NKI graph: dense constants (extra
    kernel inputs, by name) and empty outputs (produced without the kernel, by name)."""

    constants: dict = field(default_factory=dict)
    empty_outputs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LowerToNki(Pass):
    """Lower fusion groups, matmuls and data movement to NKI IR (using the LayoutAnalysis when
    one was recorded); records the KernelExtras in ``ctx``."""

    name = "lower"

    def run(self, graph: Graph, ctx: PassContext) -> Graph:
        layout = ctx.get(LayoutAnalysis)
        nki_graph, constants, empty = lower_to_nki(graph, ctx.target or TRN2, layout)
        ctx.record(KernelExtras(constants, empty))
        return nki_graph
