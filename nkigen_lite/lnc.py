"""``nk.split_cores(kernel, lnc=2)``: a compiled kernel launched on the two physical cores of a
logical NeuronCore (LNC=2), each core running half of its main loop (nki/lnc.py)."""

from __future__ import annotations

import dataclasses

from .ir.graph import Graph
from .ir.parser import parse
from .ir.passes import PassContext, get_pass
from .nki.lnc import split_cores as split_graph
from .nki.ops import ProgramIdOp
from .nki.verify import verify


def split_cores(kernel_or_graph, lnc: int = 2):
    """The ``Kernel`` (or NKI graph) split over ``lnc`` physical cores: its NKI graph gets an
    ``nki.program_id {lnc}`` and its main loop's iterations are shared out (nki/lnc.py). Runs,
    emits (``kernel[LNC]`` launch), simulates, counts and estimates like any kernel; stats and
    estimates are one core's.

    A kernel is split as lowered (its ``"lower"`` stage), before the ``deallocs`` stage, which
    then runs on the split graph: that stage may reshape the main loop (pairs of interleaved
    iterations, a software-pipelined prologue and epilogue, docs/lowering.md), and each core's
    half of the loop is reshaped the same way."""
    if isinstance(kernel_or_graph, Graph):
        return split_graph(kernel_or_graph, lnc)
    k = kernel_or_graph
    if lnc == 1 or any(isinstance(op, ProgramIdOp) for op in k.nki.body):
        return dataclasses.replace(k, nki=split_graph(k.nki, lnc), _stats=None)
    from .transforms.lower import passes as _lower_passes  # noqa: F401  (registers deallocs)

    g = split_graph(parse(k.ir("lower")), lnc)
    get_pass("deallocs").run(g, PassContext(target=k.target))
    verify(g, k.target)
    return dataclasses.replace(k, nki=g, _stats=None)
