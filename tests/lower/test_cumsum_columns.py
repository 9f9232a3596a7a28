"""np.cumsum(x, 0) of floats runs on chip (transforms/lower/cumsum_columns.py): one load, TensorE
transposes putting each column's rows along a partition, one nki.tensor_tensor_scan per PSUM
bank, the earlier parts' totals added, transposes back, one store per part; instead of the
composite's doubling steps through HBM scratch (2048x64 f32: 16x the minimum traffic, 40x the
roofline). References are NumPy float64 cumsums; tolerance: log2(R) + 4 fp32 roundings of the
running sum of magnitudes (bf16 results: plus half a bf16 ulp of the value)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk

BF16 = ml_dtypes.bfloat16


def _run(x, fn=lambda x: np.cumsum(x, 0)):
    k = nk.compile(nk.trace(fn).trace(x))
    return k, [("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))]


def _bound(x, axis=0):
    xf = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = np.cumsum(xf, axis)
        bound = (np.log2(x.shape[axis]) + 4) * 2.0**-24 * np.cumsum(np.abs(xf), axis)
    if x.dtype == BF16:
        bound = bound + 2.0**-8 * np.abs(want)
    return want, bound


@pytest.mark.parametrize(
    "shape, dtype",
    [((2048, 64), np.float32), ((512, 128), np.float32), ((1024, 32), np.float32), ((256, 4, 16), BF16)],
)
def test_cumsum_first_axis_matches_numpy(shape, dtype):
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    k, outs = _run(x)
    assert any(op.name == "nki.tensor_tensor_scan" for op in k.nki.walk())
    want, bound = _bound(x)
    for how, out in outs:
        (got,) = out.values()
        assert got.dtype == x.dtype and got.shape == x.shape, how
        assert np.all(np.abs(got.astype(np.float64) - want) <= bound), how


def test_infinities_and_nans_stay_in_their_column_after_their_row():
    x = np.random.default_rng(4).standard_normal((2048, 64)).astype(np.float32)
    x[100, 3] = np.inf
    x[1500, 3] = -np.inf  # inf - inf: NaN from there on in column 3
    x[1200, 40] = np.nan  # in the second part: after its row only
    x[7, 63] = -np.inf  # in the first part: reaches the second part's carry of column 63
    want, bound = _bound(x)
    fin = np.isfinite(want)
    _, outs = _run(x)
    for how, out in outs:
        (got,) = out.values()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=how)
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want), err_msg=how)
        assert np.all(np.abs(got[fin] - want[fin]) <= bound[fin]), how


def test_cumsum_first_axis_counts():
    """2048x64 f32: traffic 1.0x the minimum (16x expanded), 45 instructions, under 5x the
    roofline (40x expanded). The floor: 3.8 us of fixed DMA cost and 2.9 us of transfers are
    2.3x the 2.9 us roofline before the 2.1 us of scans."""
    k = nk.compile(nk.trace(lambda x: np.cumsum(x, 0)).trace(np.zeros((2048, 64), np.float32)))
    assert k.stats().hbm_traffic_ratio == 1.0
    assert k.stats().instructions_dynamic <= 45
    assert k.estimate().ratio < 5


@pytest.mark.parametrize(
    "shape, fn",
    [
        ((256, 48), lambda x: np.cumsum(x, 0)),  # 48 columns: not whole quadrants
        ((300, 64), lambda x: np.cumsum(x, 0)),  # rows not a multiple of 256
        ((4, 256, 8), lambda x: np.cumsum(x, 1)),  # a middle axis
    ],
)
def test_other_cumsums_expand_and_match(shape, fn):
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    k, outs = _run(x, fn)
    axis = 1 if len(shape) == 3 else 0
    want, bound = _bound(x, axis)
    for how, out in outs:
        (got,) = out.values()
        assert np.all(np.abs(got.astype(np.float64) - want) <= bound), how
