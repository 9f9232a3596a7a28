"""A reversed axis other than the last (np.flip(x, 0), x[:, ::-1] of a 3-D x) is moved by
indirect DMAs (transforms/lower/reverse_rows.py): per block of 128 output rows one dma_gather of
the source rows in reverse order (an iota of their indices) and one store, instead of one DMA
per index. Compared bit for bit with NumPy on Kernel.run and nk.simulate; DMA counts, traffic
and the cost model's ratio asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, DmaGatherOp

BF16 = ml_dtypes.bfloat16


@pytest.mark.parametrize(
    "shape, dtype, fn",
    [
        ((2048, 512), np.float32, lambda x: np.flip(x, 0).copy()),
        ((16, 512, 256), np.float32, lambda x: np.flip(x, 1).copy()),  # a loop over the first axis
        ((300, 40), BF16, lambda x: x[::-1].copy()),  # a 44-row remainder block
        ((4, 256, 8), np.int32, lambda x: x[:, ::-1].copy()),  # integers: moved, not computed
    ],
)
def test_reversed_rows_bit_exact(shape, dtype, fn):
    x = (np.random.default_rng(0).standard_normal(shape) * 100).astype(dtype)
    if dtype is np.float32:
        x.flat[3], x.flat[4] = np.inf, -0.0
        x.view(np.uint32).flat[6] = 0x7FC00123
    k = nk.compile(nk.trace(fn).trace(x))
    assert any(isinstance(op, DmaGatherOp) for op in k.nki.walk())
    want = np.ascontiguousarray(fn(x))
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert np.array_equal(np.asarray(got).view(np.uint8), want.view(np.uint8)), how
    assert k.stats().hbm_traffic_ratio == 1.0


def test_flip_axis_0_counts():
    """2048x512 f32: 16 gathers, 16 stores and 16 iotas executed (2,048 row DMAs before), under
    1.5x the roofline (9.3x before)."""
    k = nk.compile(nk.trace(lambda x: np.flip(x, 0).copy()).trace(np.zeros((2048, 512), np.float32)))
    ops = list(k.nki.walk())
    assert sum(isinstance(op, (DmaGatherOp, DmaCopyOp)) for op in ops) <= 4  # in a loop, not per row
    assert k.stats().instructions_dynamic <= 48
    assert k.estimate().ratio < 1.5


def test_reversal_of_a_slice_keeps_the_dma_loop():
    """The source of a gather must be a whole tensor: a reversed slice is copied per index."""
    x = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)
    fn = lambda x: x[40:2:-1].copy()  # noqa: E731
    k = nk.compile(nk.trace(fn).trace(x))
    assert not any(isinstance(op, DmaGatherOp) for op in k.nki.walk())
    np.testing.assert_array_equal(
        k.run({"x": x})["y"] if "y" in k.output_names else list(k.run({"x": x}).values())[0], fn(x)
    )
