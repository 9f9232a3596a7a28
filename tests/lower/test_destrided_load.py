"""Loads of a last-axis slice with a small step (``x[:, ::2]``, interleaved RoPE halves) read
the contiguous span and pick every step-th element on chip (transforms/lower/destrided_load.py),
instead of one 4-byte DMA descriptor per element (30x the roofline before at 2048x4096).

Values are compared with NumPy float64 on the same inputs, through the NKI interpreter and the
simulator: float32 to 1e-6 relative (one rounding of the result), bfloat16 to 2^-7 relative
(one bf16 rounding of the result), int32 exactly. DMA descriptor sizes are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost

RNG = np.random.default_rng(2611)
BF16 = ml_dtypes.bfloat16
RTOL = {np.float32: 1e-6, BF16: 2.0**-7, np.int32: 0}


def _values(shape, dtype):
    if dtype is np.int32:
        return RNG.integers(-1000, 1000, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def _check(fn, x, dtype):
    k = nk.compile(nk.trace(fn).trace(x))
    want = fn(x.astype(np.float64))
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        assert got.shape == want.shape and got.dtype == x.dtype, how
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=RTOL[dtype], atol=0, err_msg=how)
    return k


@pytest.mark.parametrize(
    "fn, shape, dtype",
    [
        (lambda x: x[:, ::2] * 2.0, (300, 1000), np.float32),
        (lambda x: x[:, 1::2] - x[:, ::2], (130, 512), BF16),
        (lambda x: x[..., 1::3] + 1, (3, 70, 200), np.int32),
        (lambda x: x[:, 5::16] * 0.5, (256, 4096), np.float32),
    ],
    ids=["even-f32", "odd-minus-even-bf16", "3d-step3-i32", "step16-f32"],
)
def test_strided_last_axis_loads_match_numpy(fn, shape, dtype):
    k = _check(fn, _values(shape, dtype), dtype)
    item = np.dtype(dtype).itemsize
    for op in k.nki.walk():  # no element-wise descriptor left
        if isinstance(op, DmaCopyOp):
            assert dma_cost(op, TRN2).chunk_bytes > item


def test_even_columns_of_a_large_matrix_cost_about_the_roofline():
    """x[:, ::2] * 2 of 2048x4096 f32: 4 KiB descriptors and at most 1.3x the time of reading x
    whole and writing y once (was 4-byte descriptors and 30x). The minimum traffic counts only
    the even columns (docs/costmodel.md), which no efficient DMA reads alone: reading all of x
    is 1.5x that minimum, so the ratio to the roofline is below 1.3 x 1.5."""
    k = nk.compile(nk.trace(lambda x: x[:, ::2] * 2.0).trace(np.zeros((2048, 4096), np.float32)))
    loads = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    assert min(dma_cost(op, TRN2).chunk_bytes for op in loads) >= 4092
    x_bytes, y_bytes = 2048 * 4096 * 4, 2048 * 2048 * 4
    assert k.stats().min_hbm_bytes == x_bytes // 2 + y_bytes
    assert k.stats().hbm_bytes <= x_bytes + y_bytes  # the span of each row (4,095 elements)
    assert k.estimate().scheduled_ns < 1.3 * (x_bytes + y_bytes) / TRN2.hbm_bytes_per_s * 1e9


@pytest.mark.parametrize(
    "fn, shape, dtype",
    [
        (lambda x: x[:, 1::2], (300, 256), np.float32),
        (lambda x: x[..., ::3], (2, 130, 96), BF16),
        (lambda x: x[:, 3::4], (64, 1000), np.int32),
    ],
    ids=["odd-f32", "3d-step3-bf16", "step4-i32"],
)
def test_strided_last_axis_copies_match_numpy(fn, shape, dtype):
    """The slice itself as the output: an HBM -> HBM copy, through SBUF (exact)."""
    k = _check(fn, _values(shape, dtype), dtype)
    item = np.dtype(dtype).itemsize
    for op in k.nki.walk():
        if isinstance(op, DmaCopyOp):
            assert dma_cost(op, TRN2).chunk_bytes > item


def test_even_columns_copy_of_a_large_matrix_counts():
    """y = x[:, ::2] of 2048x4096 f32: no descriptor under 4 KiB, at most 1.1x the time of
    reading x whole and writing y (was one 4-byte descriptor per element, 29.8x the roofline;
    the minimum traffic counts the even columns only: reading x whole is 1.5x it)."""
    k = nk.compile(nk.trace(lambda x: x[:, ::2]).trace(np.zeros((2048, 4096), np.float32)))
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    assert min(dma_cost(op, TRN2).chunk_bytes for op in dmas) >= 4096
    x_bytes, y_bytes = 2048 * 4096 * 4, 2048 * 2048 * 4
    assert k.estimate().scheduled_ns < 1.1 * (x_bytes + y_bytes) / TRN2.hbm_bytes_per_s * 1e9
