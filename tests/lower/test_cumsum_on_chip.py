"""np.cumsum of floats along the last axis runs on chip (transforms/lower/cumsum.py): one load
and one store per block of rows, the composite's doubling adds between SBUF tiles, instead of
every step stored to HBM scratch and read back (8x2048 f32: 16x the minimum traffic before).

The adds are the composite's, in the same order, in fp32: results are compared bit for bit with
the tensor interpreter (nk.run of the same graph), and with NumPy's float64 cumsum within
log2(n) + 1 fp32 roundings of the running sum of magnitudes (bf16 results: plus half a bf16
ulp of the value). Traffic and DMA counts are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp

BF16 = ml_dtypes.bfloat16


@pytest.mark.parametrize(
    "shape, dtype",
    [((8, 2048), np.float32), ((300, 100), np.float32), ((2, 3, 257), BF16), ((5,), np.float32)],
)
def test_cumsum_last_axis_matches_numpy(shape, dtype):
    x = np.random.default_rng(31).standard_normal(shape).astype(dtype)
    g = nk.trace(lambda x: np.cumsum(x, -1)).trace(x)
    k = nk.compile(g)
    assert any(op.name == "nki.tensor_tensor" for op in k.nki.walk())
    (exact,) = nk.run(g, {"x": x}).values()
    xf = x.astype(np.float64)
    want = np.cumsum(xf, -1)
    n = shape[-1]
    bound = (np.log2(n) + 1) * 2.0**-24 * np.cumsum(np.abs(xf), -1)
    if dtype is BF16:
        bound = bound + 2.0**-8 * np.abs(want)
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert got.dtype == x.dtype and got.shape == x.shape, how
        assert np.array_equal(got.view(np.uint8), exact.view(np.uint8)), how
        assert np.all(np.abs(got.astype(np.float64) - want) <= bound), how


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
    xf = x.astype(np.float64)
    want = np.cumsum(xf, -1)
    bound = (np.log2(shape[-1]) + 4) * 2.0**-24 * np.cumsum(np.abs(xf), -1)
    if dtype is BF16:
        bound = bound + 2.0**-8 * np.abs(want)
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert got.dtype == x.dtype and got.shape == x.shape, how
        assert np.all(np.abs(got.astype(np.float64) - want) <= bound), how


def test_vocabulary_cumsum_counts():
    """1x151936 f32 (top-p sampling): traffic 1.0x the minimum and under 20x the roofline (was
    26x the traffic and 1726x the roofline through scratch)."""
    k = nk.compile(nk.trace(lambda x: np.cumsum(x, -1)).trace(np.zeros((1, 151936), np.float32)))
    assert k.stats().hbm_traffic_ratio == 1.0
    assert k.estimate().ratio < 20


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
    contiguous buffer (these failed to compile when the on-chip path first landed); bit for bit
    the tensor interpreter's."""
    x = np.random.default_rng(5).standard_normal((64, 256)).astype(np.float32)
    g = nk.trace(fn).trace(x)
    k = nk.compile(g)
    (exact,) = nk.run(g, {"x": x}).values()
    want = fn(x.astype(np.float64))
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert np.array_equal(got.view(np.uint8), exact.view(np.uint8)), how
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max(), err_msg=how)
