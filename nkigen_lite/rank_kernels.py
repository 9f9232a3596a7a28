"""Compiled rank kernels: run them on the rank-parallel NKI interpreter or simulate their emitted
modules as simulated ranks.

``run_kernel_ranks(kernels, inputs_per_rank)`` runs one compiled ``Kernel`` per rank in lock step
on the NKI interpreter (``nk.nki.run_ranks``); ``simulate_ranks(kernels, inputs_per_rank)`` runs
each rank's emitted ``@nki.jit`` module on the NumPy NKI simulator, one thread per rank, the
``nki.collectives`` calls meeting across threads (nki_sim/ranks.py). Inputs are keyed by graph
input names, as for ``Kernel.run`` and ``nk.simulate``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .emit.simulate import simulate
from .ir.errors import InterpretError
from .nki.run_ranks import run_ranks as nki_run_ranks
from .nki_sim import installed
from .nki_sim.ranks import run_ranks as sim_run_ranks


def _check(kernels, inputs_per_rank) -> list:
    kernels = list(kernels)
    if len(inputs_per_rank) != len(kernels):
        raise InterpretError(f"expected inputs for {len(kernels)} ranks, got {len(inputs_per_rank)}")
    return kernels


def compile_ranks(graphs, **compile_kw) -> list:
    """``nk.compile`` every rank graph (a list, or the ``ShardedGraph`` of ``nk.shard``)."""
    from .compiler import compile as nk_compile

    return [nk_compile(g, **compile_kw) for g in getattr(graphs, "graphs", graphs)]


def run_kernel_ranks(kernels, inputs_per_rank: Sequence[Mapping[str, np.ndarray]]) -> list[dict]:
    """Run compiled rank kernels in lock step on the NKI interpreter; one output dict per rank."""
    kernels = _check(kernels, inputs_per_rank)
    ins = [{**k.kernel_inputs(i), **k.constants} for k, i in zip(kernels, inputs_per_rank)]
    outs = nki_run_ranks(
        [k.nki for k in kernels], ins, world=len(kernels), target=kernels[0].target, verify=False
    )
    return [k.with_empty_outputs(o) for k, o in zip(kernels, outs)]


def simulate_ranks(kernels, inputs_per_rank: Sequence[Mapping[str, np.ndarray]]) -> list[dict]:
    """Simulate the emitted modules of compiled rank kernels (or module source texts), one
    thread per rank; one output dict per rank."""
    kernels = _check(kernels, inputs_per_rank)
    with installed():  # one installation for every rank thread
        return sim_run_ranks(
            [lambda k=k, i=i: simulate(k, dict(i)) for k, i in zip(kernels, inputs_per_rank)]
        )
