"""Means of integers come from the exact integer sum (transforms/decomposition/wide_int_mean.py),
as NumPy's do (float64 sum of the integers, divided; the tensor dialect narrows the float64
result to f32). The reference is NumPy's mean of the values as int64, rounded to f32: nk.run
(tensor interpreter) matches it exactly; Kernel.run (NKI interpreter) and nk.simulate divide
the exact sum in fp32, within 2 ulp of it (three roundings of half an ulp)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk

from .test_wide_int_sum import _values

ULPS = 2


def _check(fn, x, axis):
    want = np.asarray(np.mean(x.astype(np.int64), axis=axis)).astype(np.float32)
    g = nk.trace(fn).trace(x)
    k = nk.compile(g)
    (exact,) = nk.run(g, {"x": x}).values()
    np.testing.assert_array_equal(exact, want, err_msg="nk.run")
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert got.dtype == want.dtype and got.shape == want.shape, how
        err = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want))
        assert err.max() <= ULPS, f"{how}: {err.max()} ulp"


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("shape, axis", [((256, 300), -1), ((600, 130), 0), ((100, 300), None)])
def test_int32_mean_is_the_exact_sum_divided(shape, axis, dtype):
    x = _values(dtype, *shape)
    _check(lambda x: np.mean(x, axis=axis), x, axis)


def test_mean_of_cancelling_large_values_is_exact():
    x = np.tile(np.array([2**30 + 1, -(2**30), 2**31 - 1, -(2**31) + 2], np.int32), (3, 75))
    x[1] = -x[1]
    _check(lambda x: np.mean(x, axis=1), x, 1)  # rows: 0.5, -0.5, 0.5


def test_long_int16_mean_is_exact():
    """Partial sums near 5e7 (fp32 keeps multiples of 4 there) that cancel to 2 (mean 2 / 3004)."""
    x = _values(np.int16, 4, 3004)
    x[0] = np.concatenate([np.full(1501, 32767), np.full(1501, -32767), [1, 1]])
    _check(lambda x: np.mean(x, axis=1), x, 1)


@pytest.mark.parametrize(
    "dtype, shape, axis",
    [
        (np.int32, (2, 40000), 1),
        (np.uint32, (70000,), 0),
        (np.int16, (2, 33000), 1),
        (np.int32, (260, 130), None),
    ],
)
def test_means_longer_than_2_pow_15_are_exact_sums_divided(dtype, shape, axis):
    """Three int32 words of the exact sum (long_words); before, an fp32 sum (the two-axis case
    was 8 ulp off)."""
    x = _values(dtype, *shape) if len(shape) == 2 else _values(dtype, 1, *shape)[0]
    _check(lambda x: np.mean(x, axis=axis), x, axis)


def test_long_means_of_cancelling_values():
    """Fails before: 20,000 pairs (2**30 + 1, -2**30) have mean 0.5 (the fp32 sum gave 0);
    int16 blocks of +-32767 cancel to 3 over 33,000 elements."""
    x = np.tile(np.array([2**30 + 1, -(2**30)], np.int32), (2, 20000))
    x[1] = -x[1]
    _check(lambda x: np.mean(x, axis=1), x, 1)
    y = np.concatenate([np.full(16499, 32767), np.full(16499, -32767), [1, 1]]).astype(np.int16)
    y = np.stack([y, y[::-1] * -1])
    y[1, 0] = 3
    _check(lambda x: np.mean(x, axis=1), y, 1)
