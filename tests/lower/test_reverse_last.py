"""A reversed last axis (np.flip(x, -1), x[..., ::-1]) runs on chip (transforms/lower/
reverse_last.py): TensorE transposes, quadrant-reversing nki.stream_shuffle and mirrored
placement, instead of one DMA per column. Pure data movement: compared bit for bit with NumPy
(infinities, -0.0 and a NaN payload included) on Kernel.run and nk.simulate; DMA, instruction
and traffic counts and the cost model's ratio asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp

BF16 = ml_dtypes.bfloat16


def _data(shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if dtype is np.float32:
        x.flat[5], x.flat[7], x.flat[11] = np.inf, -0.0, -np.inf
        x.view(np.uint32).flat[9] = 0x7FC00123  # a NaN with a payload
    return x


def _check(fn, x):
    k = nk.compile(nk.trace(fn).trace(x))
    want = np.ascontiguousarray(fn(x))
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert got.dtype == want.dtype and got.shape == want.shape, how
        assert np.array_equal(np.asarray(got).view(np.uint8), want.view(np.uint8)), how
    return k


@pytest.mark.parametrize(
    "shape, dtype, fn, traffic",
    [
        ((64, 4096), np.float32, lambda x: np.flip(x, -1).copy(), 1.0),  # 2 pieces per row
        ((300, 384), np.float32, lambda x: np.flip(x, -1).copy(), 1.0),  # a loop, a 44-row remainder
        ((3, 5, 256), BF16, lambda x: x[..., ::-1].copy(), 1.0),  # 8 pieces per row
        # one row on 8 partitions; the reversed value is an HBM intermediate the multiply reads
        ((1, 1024), np.float32, lambda x: np.flip(x, -1) * 2.0, 2.0),
    ],
)
def test_reversed_last_axis_bit_exact_on_chip(shape, dtype, fn, traffic):
    k = _check(fn, _data(shape, dtype))
    names = [op.name for op in k.nki.walk()]
    assert "nki.stream_shuffle" in names and "nki.nc_transpose" in names
    assert k.stats().hbm_traffic_ratio == traffic


def test_flip_of_64_rows_counts():
    """64x4096 f32: 8 loads and 8 stores of 1 KiB per partition, 136 instructions, under 2x
    the roofline (4,096 DMAs and 89.9x before)."""
    k = nk.compile(nk.trace(lambda x: np.flip(x, -1).copy()).trace(np.zeros((64, 4096), np.float32)))
    assert sum(isinstance(op, DmaCopyOp) for op in k.nki.walk()) == 16
    assert k.stats().instructions_dynamic <= 136
    assert k.stats().hbm_traffic_ratio == 1.0
    assert k.estimate().ratio < 2.0


@pytest.mark.parametrize(
    "shape, dtype, fn",
    [
        ((256, 512), np.float32, lambda x: np.flip(x).copy()),
        ((300, 128), np.float32, lambda x: np.flip(x).copy()),  # a 44-row remainder block
        ((2, 3, 256), BF16, lambda x: x[::-1, ::-1, ::-1].copy()),
    ],
)
def test_every_axis_reversed_gathers_the_rows_backwards(shape, dtype, fn):
    """np.flip(x): the rows (flattened leading axes) are gathered in reverse order by dma_gather,
    then each row reversed on chip."""
    k = _check(fn, _data(shape, dtype))
    names = [op.name for op in k.nki.walk()]
    assert "nki.dma_gather" in names and "nki.stream_shuffle" in names
    assert k.stats().hbm_traffic_ratio == 1.0


def test_flip_every_axis_counts():
    """256x512 f32: under 4x the roofline (131,072 element DMAs and 915x before)."""
    k = nk.compile(nk.trace(lambda x: np.flip(x).copy()).trace(np.zeros((256, 512), np.float32)))
    assert k.stats().instructions_dynamic <= 56
    assert k.estimate().ratio < 4


@pytest.mark.parametrize(
    "shape, dtype, fn",
    [
        ((16, 100), np.float32, lambda x: np.flip(x, -1).copy()),  # not whole 128-column blocks
        ((8, 256), np.int32, lambda x: np.flip(x, -1).copy()),  # not float: no PE transposes
        ((256, 128), np.float32, lambda x: np.flip(x, 0).copy()),  # another axis
        ((4, 256), np.float32, lambda x: x[:, 200:10:-1].copy()),  # part of the axis
    ],
)
def test_other_reversals_keep_the_dma_loop(shape, dtype, fn):
    x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    k = _check(fn, x)
    assert "nki.stream_shuffle" not in [op.name for op in k.nki.walk()]


def test_long_row_of_an_odd_number_of_blocks_fits_sbuf():
    """One row of 209 blocks of 128 (26,752 f32; the vocabulary row 151,936 is 1,187 blocks):
    no power-of-two split, so 128-column chunks; loading every chunk of the block before its
    reversal held 208 x 1 KiB and failed verification (SBUF peak 212,992 > 212,984 B). The
    chunks now go through in windows of 3/8 of SBUF."""
    x = _data((1, 128 * 209), np.float32)
    k = nk.compile(nk.trace(lambda x: np.flip(x, -1)).trace(x))
    (got,) = k.run({"x": x}).values()
    assert np.array_equal(np.asarray(got).view(np.uint8), np.flip(x, -1).copy().view(np.uint8))
