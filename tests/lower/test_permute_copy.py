"""Permuting copies (issue 12 point 6): a copy whose contiguous source dim is not the
destination's last dim goes through TensorE transposes, never one element-wise HBM -> HBM DMA.
Results are compared bit for bit with NumPy (a copy is exact); DMA descriptor sizes and counts
are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, TransposeOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost

RNG = np.random.default_rng(126)


def _compile(fn, x):
    return nk.compile(nk.trace(fn).trace(x))


@pytest.mark.parametrize(
    "shape,perm,dtype",
    [
        ((64, 128, 256), (2, 0, 1), np.float32),  # the issue's case
        ((256, 384), (1, 0), np.float32),
        ((2, 128, 640), (0, 2, 1), ml_dtypes.bfloat16),
        ((3, 100, 96), (2, 0, 1), np.float32),  # blocks smaller than a tile
    ],
    ids=["3d-issue", "2d", "batched-bf16", "small"],
)
def test_permute_copy_uses_transposes(shape, perm, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    k = _compile(lambda a: a.transpose(perm).copy(), x)
    want = np.ascontiguousarray(x.transpose(perm))
    for how, got in (("Kernel.run", k.run({"a": x})), ("nk.simulate", nk.simulate(k, {"a": x}))):
        y = got["y"]
        assert y.shape == want.shape and y.dtype == want.dtype, how
        assert np.array_equal(y.view(np.uint8), want.view(np.uint8)), how
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    assert any(isinstance(op, TransposeOp) for op in k.nki.walk())
    itemsize = np.dtype(dtype).itemsize
    for op in dmas:  # every descriptor moves a whole run of the contiguous dims it touches
        assert dma_cost(op, TRN2).chunk_bytes >= min(shape[-1], shape[perm[-1]], 128) * itemsize
    s = k.stats()
    assert s.dma_bytes == s.min_hbm_bytes


def test_issue_case_counts():
    """transpose(2, 0, 1).copy() of 64x128x256 f32: 64 loads of 1 KiB runs and 128 stores of
    512 B runs (was one DMA of 4-byte descriptors)."""
    x = np.zeros((64, 128, 256), np.float32)
    k = _compile(lambda a: a.transpose(2, 0, 1).copy(), x)
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    chunks = sorted({dma_cost(op, TRN2).chunk_bytes for op in dmas})
    assert chunks == [512, 1024]
    assert k.stats().dma_count == 64 * 3


def test_integer_permute_keeps_the_dma():
    """Integers do not pass through the PE array: the plain DMA stays (exact)."""
    x = RNG.integers(-(2**31), 2**31 - 1, (128, 256), dtype=np.int32)
    k = _compile(lambda a: a.T.copy(), x)
    assert not any(isinstance(op, TransposeOp) for op in k.nki.walk())
    assert np.array_equal(k.run({"a": x})["y"], x.T)


def test_reshaping_copy_of_a_permuted_view():
    """A reshape of a transposed view needs a copy with different shapes on both sides: the
    row-major element pairing of the plain DMA stays, and the values match NumPy."""
    x = RNG.standard_normal((4, 8, 128)).astype(np.float32)
    k = _compile(lambda a: a.transpose(1, 0, 2).reshape(8, 512), x)
    assert np.array_equal(k.run({"a": x})["y"], x.transpose(1, 0, 2).reshape(8, 512))
