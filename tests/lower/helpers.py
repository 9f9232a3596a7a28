"""Shared helpers for lowering tests: build one-op graphs and compare Kernel.run with nk.run."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.testing.tolerance import assert_close, tolerance_for


def compile_and_compare(graph, inputs, *, scale: float = 1.0, what: str = "") -> nk.Kernel:
    """Compile ``graph``, run it on the NKI interpreter and check every output against the
    tensor interpreter (faithful mode) with the output dtype's tolerance times ``scale``
    (``scale`` > 1 for long reductions whose summation order differs)."""
    k = nk.compile(graph)
    got = k.run(inputs)
    ref = nk.run(graph, inputs)
    for name, r in ref.items():
        dt = graph.outputs[name].dtype
        rtol, atol = tolerance_for(dt)
        r64 = r.astype(np.float64) if (dt.is_float) else r
        assert_close(got[name], r64, dt, what=f"{what} output {name}", rtol=rtol * scale, atol=atol * scale)
    return k


def random(shape, dtype, rng, *, positive=False, scale=2.0):
    a = rng.standard_normal(shape) * scale
    if positive:
        a = np.abs(a) + 0.5
    return np.asarray(a).astype(dtype.np_dtype)
