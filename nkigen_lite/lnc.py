"""``nk.split_cores(kernel, lnc=2)``: a compiled kernel launched on the two physical cores of a
logical NeuronCore (LNC=2), each core running half of its main loop (nki/lnc.py)."""

from __future__ import annotations

import dataclasses

from .ir.clone import clone_graph
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

    A compiled kernel is lowered again for ``lnc`` cores (``LoweringCores``: lowerings that emit
    straight-line code, such as row_blocks.py, put their work in a top-level loop of ``lnc``
    trips; every other lowering is unchanged) and split as lowered, before the ``deallocs``
    stage, which then runs on the split graph: that stage may reshape the main loop (pairs of
    interleaved iterations, a software-pipelined prologue and epilogue, docs/lowering.md), and
    each core's half of the loop is reshaped the same way. A kernel without its source graph is
    split from its ``"lower"`` stage as it is."""
    if isinstance(kernel_or_graph, Graph):
        return split_graph(kernel_or_graph, lnc)
    k = kernel_or_graph
    if lnc == 1 or any(isinstance(op, ProgramIdOp) for op in k.nki.body):
        return dataclasses.replace(k, nki=split_graph(k.nki, lnc), _stats=None)
    from .compiler import _run_stages
    from .transforms.lower.passes import LoweringCores  # (also registers deallocs)

    if k._source is not None:
        lowered, _ = _run_stages(
            clone_graph(k._source), k.target, k._knobs, None, stop="lower", analyses=(LoweringCores(lnc),)
        )
    else:
        lowered = parse(k.ir("lower"))
    g = split_graph(lowered, lnc)
    get_pass("deallocs").run(g, PassContext(target=k.target))
    verify(g, k.target)
    return dataclasses.replace(k, nki=g, _stats=None)
