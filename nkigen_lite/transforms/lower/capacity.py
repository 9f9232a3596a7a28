"""HBM capacity check before lowering: every tensor the kernel reads, writes or keeps in HBM
must fit the HBM one NeuronCore addresses, and the kernel's inputs and outputs together too."""

from __future__ import annotations

from ...ir.errors import BuildError
from ...ir.graph import Graph
from ...ir.printer import Printer
from ...nki.target import Target


def check_hbm_capacity(graph: Graph, target: Target) -> None:
    """One BuildError naming the first value too large for HBM (or the inputs and outputs
    together), with the byte counts."""
    cap = target.hbm_bytes
    names = None

    def fail(what: str, nbytes: int) -> None:
        raise BuildError(
            f"lowering @{graph.name}: {what} needs {nbytes:,} B of HBM, more than the "
            f"{cap:,} B one {target.name} NeuronCore addresses"
        )

    values = list(graph.inputs) + [r for op in graph.body for r in op.results]
    for v in values:
        if v.type.nbytes > cap:
            names = names or Printer(graph)
            fail(f"value {names.name(v)} : {v.type}", v.type.nbytes)
    io = {id(v): v for v in list(graph.inputs) + list(graph.outputs.values())}
    total = sum(v.type.nbytes for v in io.values())
    if total > cap:
        fail("the kernel's inputs and outputs together", total)
