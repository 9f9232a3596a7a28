"""var / std of integers beyond 2**24 (transforms/decomposition/wide_int_var.py): the deviations
from an integer near the exact mean, each rounded once to fp32, then the fp32 two-pass. NumPy
computes an integer var / std in float64; the reference is that, and the tensor dialect's f32
result is compared with relative tolerance RTOL through nk.run (tensor interpreter: float64 of
the exact integers, rounded to f32), Kernel.run (NKI interpreter) and nk.simulate. Before, the
fp32 two-pass rounded every value beyond 2**24 first (values 2**30 + 0..9 had variance 0)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk

RNG = np.random.default_rng(2032)
RTOL = 2e-6
"""Measured at most 6e-7: d is within half an ulp of x - c, then the fp32 two-pass over values
the size of the spread (its sums round like a float var's)."""


def _full(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True).astype(dtype)


def _check(fn, ref, x, axis, ddof):
    want = np.asarray(ref(x.astype(np.float64), axis=axis, ddof=ddof))
    g = nk.trace(fn).trace(x)
    k = nk.compile(g)
    for how, out in (
        ("nk.run", nk.run(g, {"x": x})),
        ("Kernel.run", k.run({"x": x})),
        ("nk.simulate", nk.simulate(k, {"x": x})),
    ):
        (got,) = out.values()
        assert got.dtype == np.float32 and got.shape == want.shape, how
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=RTOL, atol=0, err_msg=how)


@pytest.mark.parametrize("kind", [np.var, np.std])
def test_close_values_far_from_zero_keep_their_spread(kind):
    """Fails before (variance 0 or off by 100%): values 2**30 + 0..9, -2**31 + 0..999, 2**32 - 1 - 0..99."""
    x = (2**30 + RNG.integers(0, 10, (3, 300))).astype(np.int32)
    x[1] = -(2**31) + RNG.integers(0, 1000, 300)
    _check(lambda x: kind(x, axis=1), kind, x, 1, 0)
    u = (2**32 - 1 - RNG.integers(0, 100, (2, 500))).astype(np.uint32)
    _check(lambda x: kind(x, axis=1, ddof=1), kind, u, 1, 1)


@pytest.mark.parametrize(
    "dtype, shape, axis, ddof",
    [(np.int32, (3, 300), 1, 1), (np.uint32, (130, 40), 0, 0), (np.int32, (20, 30), None, 0)],
)
def test_full_range_var_and_std(dtype, shape, axis, ddof):
    x = _full(dtype, shape)
    _check(lambda x: np.var(x, axis=axis, ddof=ddof), np.var, x, axis, ddof)
    _check(lambda x: np.std(x, axis=axis, ddof=ddof), np.std, x, axis, ddof)
