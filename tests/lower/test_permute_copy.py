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
    """transpose(2, 0, 1).copy() of 64x128x256 f32: the 64 slabs are contiguous, 8 go into one
    load (8 KiB per partition) and each group's two 128-column blocks into one store (runs of
    8 x 128 floats = 4 KiB): 16 DMAs (was 64 loads of 1 KiB runs + 128 stores of 512 B runs =
    192) and 208 executed instructions (was 448); the 128 transposes stay."""
    x = np.zeros((64, 128, 256), np.float32)
    k = _compile(lambda a: a.transpose(2, 0, 1).copy(), x)
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    chunks = sorted({dma_cost(op, TRN2).chunk_bytes for op in dmas})
    assert chunks == [4096, 8192]
    s = k.stats()
    assert s.dma_count == 16
    assert s.dma_bytes == s.min_hbm_bytes
    assert s.instructions_dynamic <= 208
    e = k.estimate()
    assert e.dma_issue_ns <= 16 * TRN2.dge_issue_ns


@pytest.mark.parametrize(
    "shape,perm,dtype,dmas",
    [
        ((2, 128, 640), (0, 2, 1), ml_dtypes.bfloat16, 2),  # 2 slabs in one load, 5 column blocks
        ((16, 256, 128), (2, 0, 1), np.float32, 2 * 2),  # 16 slabs of 256 rows: 8 per load
        ((4, 2, 64, 256), (0, 3, 1, 2), np.float32, 4 * 2),  # an outer loop over dim 0
    ],
    ids=["bf16-5-blocks", "tall-slabs", "outer-loop"],
)
def test_batched_permute_counts(shape, perm, dtype, dmas):
    """Contiguous slabs are batched into one load and one store per group (bit-exact)."""
    x = RNG.standard_normal(shape).astype(dtype)
    k = _compile(lambda a: a.transpose(perm).copy(), x)
    want = np.ascontiguousarray(x.transpose(perm))
    for how, got in (("Kernel.run", k.run({"a": x})), ("nk.simulate", nk.simulate(k, {"a": x}))):
        assert np.array_equal(got["y"].view(np.uint8), want.view(np.uint8)), how
    s = k.stats()
    assert s.dma_count == dmas
    assert s.dma_bytes == s.min_hbm_bytes
    itemsize = np.dtype(dtype).itemsize
    for op in k.nki.walk():
        if isinstance(op, DmaCopyOp):
            assert dma_cost(op, TRN2).chunk_bytes >= shape[perm[-1]] * itemsize  # whole dst rows


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
