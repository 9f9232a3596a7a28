"""Shared helpers of the transform tests: run a graph before and after a pass and compare."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.testing import assert_close
from nkigen_lite.testing.tolerance import tolerance_for


def copy_graph(g):
    """An independent copy of ``g`` (through the text format)."""
    return nk.parse(str(g))


def _coarsest_tolerance(*graphs) -> tuple[float, float]:
    vals = [v for g in graphs for v in list(g.inputs) + [r for op in g.walk() for r in op.results]]
    tols = [tolerance_for(v.dtype) for v in vals if v.dtype.is_float]
    return max(tols) if tols else (0.0, 0.0)


def assert_same_semantics(before, after, feed, *, f64_tol=None, what=""):
    """Outputs of ``after`` match ``before``: float64 mode with ``f64_tol`` as (rtol, atol),
    by default the tolerance of the least precise float dtype of any value in either graph
    (the float64 mode rounds constants and casts to their dtype, so a decomposition's f32
    constants and its casts back to a narrow dtype round there too), faithful mode with each
    output dtype's tolerance."""
    f64_default = _coarsest_tolerance(before, after)
    for mode in ("float64", "faithful"):
        ref = nk.run(before, feed, mode)
        got = nk.run(after, feed, mode)
        for name, v in before.outputs.items():
            label = f"{what or before.name} {mode} {name}"
            if mode == "float64" and v.dtype.is_float:
                rtol, atol = f64_tol if f64_tol else f64_default
                assert_close(got[name], ref[name], "float64", what=label, rtol=rtol, atol=atol)
            else:
                assert_close(got[name], ref[name], v.dtype, what=label)


def wide_floats(rng, shape, dtype=np.float32, zeros=0.1, scales=(1e-3, 1.0, 10.0, 1e3, 1e5)):
    """Normal floats scaled over several magnitudes, with exact zeros and small integers."""
    a = rng.standard_normal(shape) * rng.choice(scales, shape)
    a = np.where(rng.random(shape) < zeros, 0.0, a)
    a = np.where(rng.random(shape) < 0.1, np.round(a), a)
    return a.astype(dtype)


def wide_ints(rng, shape, np_dtype):
    """Integers over the whole range of the dtype, half of them small (incl. 0 and ±1)."""
    info = np.iinfo(np_dtype)
    big = rng.integers(info.min, info.max, shape, endpoint=True)
    small = rng.integers(max(info.min, -12), min(info.max, 12), shape, endpoint=True)
    return np.where(rng.random(shape) < 0.5, small, big).astype(np_dtype)
