"""``nk.split_cores(kernel, lnc=2)``: a compiled kernel launched on the two physical cores of a
logical NeuronCore (LNC=2), each core running half of its main loop (nki/lnc.py)."""

from __future__ import annotations

import dataclasses

from .ir.graph import Graph
from .nki.lnc import split_cores as split_graph


def split_cores(kernel_or_graph, lnc: int = 2):
    """The ``Kernel`` (or NKI graph) split over ``lnc`` physical cores: its NKI graph gets an
    ``nki.program_id {lnc}`` and its main loop's iterations are shared out (nki/lnc.py). Runs,
    emits (``kernel[LNC]`` launch), simulates, counts and estimates like any kernel; stats and
    estimates are one core's."""
    if isinstance(kernel_or_graph, Graph):
        return split_graph(kernel_or_graph, lnc)
    k = kernel_or_graph
    return dataclasses.replace(k, nki=split_graph(k.nki, lnc), _stats=None)
