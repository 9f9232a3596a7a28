"""np.cumsum of floats along the last axis runs on chip (transforms/lower/cumsum.py): one load
and one store per block of rows, one nki.tensor_tensor_scan per block (NumPy's sequential order),
instead of every doubling step of the composite stored to HBM scratch and read back (8x2048 f32:
16x the minimum traffic before).

References are NumPy float64 cumsums; tolerance: log2(n) + 4 fp32 roundings of the running sum
of magnitudes (bf16 results: plus half a bf16 ulp of the value). Rows on one partition add in
NumPy's order in fp32: bit for bit NumPy's float32 cumsum. Traffic, DMA and instruction counts
and the cost model's ratio are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp

BF16 = ml_dtypes.bfloat16


def _bound(x, dtype):
    xf = x.astype(np.float64)
    want = np.cumsum(xf, -1)
    bound = (np.log2(x.shape[-1]) + 4) * 2.0**-24 * np.cumsum(np.abs(xf), -1)
    if dtype is BF16:
        bound = bound + 2.0**-8 * np.abs(want)
    return want, bound


@pytest.mark.parametrize(
    "shape, dtype",
    [((8, 2048), np.float32), ((300, 100), np.float32), ((2, 3, 257), BF16), ((5,), np.float32)],
)
def test_cumsum_last_axis_matches_numpy(shape, dtype):
    x = np.random.default_rng(31).standard_normal(shape).astype(dtype)
    k = nk.compile(nk.trace(lambda x: np.cumsum(x, -1)).trace(x))
    assert any(op.name == "nki.tensor_tensor_scan" for op in k.nki.walk())
    want, bound = _bound(x, dtype)
    spread = any(op.name == "nki.nc_transpose" for op in k.nki.walk())
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert got.dtype == x.dtype and got.shape == x.shape, how
        assert np.all(np.abs(got.astype(np.float64) - want) <= bound), how
        if dtype is np.float32 and not spread:  # one partition per row: NumPy's fp32 order
            assert np.array_equal(got.view(np.uint8), np.cumsum(x, -1).view(np.uint8)), how


def test_infinities_and_nans_stay_in_their_row_after_their_position():
    """8x2048 spreads each row over 16 partitions; an inf, a -inf after it and a NaN reach only
    the later elements of their own row, as in NumPy."""
    x = np.random.default_rng(7).standard_normal((8, 2048)).astype(np.float32)
    x[1, 300] = np.inf
    x[2, 1000] = np.inf
    x[2, 1500] = -np.inf
    x[5, 5] = np.nan
    k = nk.compile(nk.trace(lambda x: np.cumsum(x, -1)).trace(x))
    with np.errstate(invalid="ignore"):  # inf + -inf in the reference
        want, bound = _bound(x, np.float32)
    fin = np.isfinite(want)
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=how)
        np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want), err_msg=how)
        assert np.all(np.abs(got[fin] - want[fin]) <= bound[fin]), how


def test_cumsum_moves_each_byte_once():
    """8x2048 f32: one load and the store (in two column halves, tail_split.py): traffic 1.0x
    the minimum (was 16x through scratch)."""
    k = nk.compile(nk.trace(lambda x: np.cumsum(x, -1)).trace(np.zeros((8, 2048), np.float32)))
    s = k.stats()
    assert s.hbm_traffic_ratio == 1.0
    assert sum(isinstance(op, DmaCopyOp) for op in k.nki.walk()) <= 3


@pytest.mark.parametrize(
    "shape, dtype", [((1, 151936), np.float32), ((2, 4096), BF16), ((1, 3000), np.float32)]
)
def test_long_rows_spread_over_partitions_match_numpy(shape, dtype):
    """A long row is scanned in segments on up to 128 partitions, then each segment adds the
    earlier segments' total: within log2(n) + 4 fp32 roundings of the running sum of magnitudes
    (bf16: plus half a bf16 ulp of the value)."""
    x = np.random.default_rng(41).standard_normal(shape).astype(dtype)
    k = nk.compile(nk.trace(lambda x: np.cumsum(x, -1)).trace(x))
    assert any(op.name == "nki.nc_transpose" for op in k.nki.walk())
    want, bound = _bound(x, dtype)
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert got.dtype == x.dtype and got.shape == x.shape, how
        assert np.all(np.abs(got.astype(np.float64) - want) <= bound), how


def test_vocabulary_cumsum_counts():
    """1x151936 f32 (top-p sampling): traffic 1.0x the minimum, 13 instructions and under 3.6x
    the roofline (26x the traffic and 1726x the roofline through scratch; 15.7x with doubling
    adds on chip)."""
    k = nk.compile(nk.trace(lambda x: np.cumsum(x, -1)).trace(np.zeros((1, 151936), np.float32)))
    assert k.stats().hbm_traffic_ratio == 1.0
    assert k.stats().instructions_dynamic <= 13
    assert k.estimate().ratio < 3.6


def test_few_rows_spread_over_partitions_counts():
    """8x2048 f32: 16 partitions per row, 16 instructions, under 25x the roofline (148x with
    doubling adds on 8 partitions). The floor: the first load's and the last store's fixed DMA
    costs, 2 x 1.9 us, are 10.4x the 0.36 us roofline on their own."""
    k = nk.compile(nk.trace(lambda x: np.cumsum(x, -1)).trace(np.zeros((8, 2048), np.float32)))
    assert k.stats().instructions_dynamic <= 16
    assert k.estimate().ratio < 25


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: np.cumsum(x.T, -1),
        lambda x: np.cumsum(x[:, ::2], -1),
        lambda x: np.cumsum(x.T, -1).T,
        lambda x: np.concatenate([np.cumsum(x, -1), x], 0),
    ],
    ids=["of-a-transpose", "of-a-strided-slice", "into-a-transposed-output", "into-a-concat"],
)
def test_cumsum_of_and_into_views(fn):
    """An operand or result home that is not (rows, n) with unit-stride rows is copied through a
    contiguous buffer (these failed to compile when the on-chip path first landed); rows of 256
    or 64 lie one per partition: bit for bit NumPy's float32 result."""
    x = np.random.default_rng(5).standard_normal((64, 256)).astype(np.float32)
    k = nk.compile(nk.trace(fn).trace(x))
    exact = np.ascontiguousarray(fn(x))
    want = fn(x.astype(np.float64))
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert np.array_equal(got.view(np.uint8), exact.view(np.uint8)), how
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max(), err_msg=how)
