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
class LoweringCores:
    """Recorded before the ``lower`` pass when the kernel is lowered to be split over ``lnc``
    physical cores (``nk.split_cores``): lowerings that would emit straight-line code share
    their work out in a top-level loop of ``lnc`` trips instead (row_blocks.py)."""

    lnc: int = 1


@dataclass(frozen=True)
class LowerToNki(Pass):
    """Lower fusion groups, matmuls and data movement to NKI IR (using the LayoutAnalysis when
    one was recorded); records the KernelExtras in ``ctx``."""

    name = "lower"

    def run(self, graph: Graph, ctx: PassContext) -> Graph:
        layout = ctx.get(LayoutAnalysis)
        cores = ctx.get(LoweringCores)
        lnc = cores.lnc if cores is not None else 1
        nki_graph, constants, empty = lower_to_nki(graph, ctx.target or TRN2, layout, lnc=lnc)
        ctx.record(KernelExtras(constants, empty))
        return nki_graph
