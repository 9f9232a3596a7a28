"""Helpers for the model-scale lowering tests: run a compiled graph through ``nk.run``,
``Kernel.run`` and ``nk.simulate`` and compare each with an independent float64 NumPy
reference, with a tolerance per output dtype (times a stated factor for long reductions)."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.testing.tolerance import assert_close, tolerance_for


def max_rel_error(got, ref) -> float:
    """max |got - ref| / max(1, max |ref|) (0 for empty arrays)."""
    ref = np.asarray(ref, np.float64)
    got = np.asarray(got, np.float64)
    if ref.size == 0:
        return 0.0
    return float(np.abs(got - ref).max() / max(1.0, float(np.abs(ref).max())))


def check_three_ways(
    graph,
    inputs: dict,
    reference: dict,
    *,
    scale: float = 1.0,
    kernel: nk.Kernel | None = None,
    simulate: bool = True,
) -> tuple[nk.Kernel, float]:
    """Compile ``graph`` (unless ``kernel`` is given) and compare nk.run, Kernel.run and (when
    ``simulate``) nk.simulate with the float64 ``reference``; returns the kernel and the worst
    relative error of the compiled runs."""
    k = kernel or nk.compile(graph)
    runs = {"nk.run": nk.run(graph, inputs), "Kernel.run": k.run(inputs)}
    if simulate:
        runs["nk.simulate"] = nk.simulate(k, inputs)
    worst = 0.0
    for name, ref in reference.items():
        dt = graph.outputs[name].dtype
        rtol, atol = tolerance_for(dt)
        for how, out in runs.items():
            assert out[name].shape == np.shape(ref), (how, name)
            assert_close(
                out[name],
                ref,
                dt,
                what=f"{graph.name}.{name} via {how}",
                rtol=rtol * scale,
                atol=atol * scale * max(1.0, float(np.abs(ref).max())),
            )
            if how != "nk.run":
                worst = max(worst, max_rel_error(out[name], ref))
    return k, worst
