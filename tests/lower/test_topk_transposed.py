"""topk / argmax over a non-last axis (``np.argmax(x, 0)``): the rows the native topk reads
run along x's columns, so each element was one 4-byte DMA descriptor (89x the roofline at
2048x4096 f32). The lowering (transforms/lower/topk.py) first copies them into a contiguous
buffer through TensorE transposes (permute_copy.py).

Indices are compared exactly with NumPy's (ties cannot occur: the values are distinct), values
exactly (a copy and a selection are exact); DMA descriptor sizes are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, TransposeOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost


def _distinct(shape, seed):
    """Distinct float32 values (integers below 2^24 are exact)."""
    n = int(np.prod(shape))
    return np.random.default_rng(seed).permutation(n).reshape(shape).astype(np.float32)


def _no_elementwise_dma(k, itemsize):
    assert any(isinstance(op, TransposeOp) for op in k.nki.walk())
    for op in k.nki.walk():  # the loads; the results are one index (or 8) per partition
        if isinstance(op, DmaCopyOp) and (c := dma_cost(op, TRN2)).bytes > 128 * 8 * itemsize:
            assert c.chunk_bytes > itemsize


@pytest.mark.parametrize("shape", [(384, 256), (1024, 128)])
def test_argmax_axis0_f32_matches_numpy(shape):
    x = _distinct(shape, 7)
    k = nk.compile(nk.trace(lambda x: np.argmax(x, 0)).trace(x))
    want = np.argmax(x.astype(np.float64), 0)
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        np.testing.assert_array_equal(got, want, err_msg=how)
    _no_elementwise_dma(k, 4)


def test_argmax_axis0_bf16_first_index_of_ties():
    """bf16 values 0..255 in 256 rows: every column holds ties; NumPy's first index wins."""
    rng = np.random.default_rng(11)
    x = rng.integers(0, 256, (256, 640)).astype(ml_dtypes.bfloat16)
    k = nk.compile(nk.trace(lambda x: np.argmax(x, 0)).trace(x))
    want = np.argmax(x.astype(np.float64), 0)
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        np.testing.assert_array_equal(got, want, err_msg=how)
    _no_elementwise_dma(k, 2)


def test_topk_of_a_transpose_matches_numpy():
    x = _distinct((512, 200), 3)
    k = nk.compile(nk.trace(lambda x: nk.topk(x.T, 8)).trace(x))
    xt = x.T.astype(np.float64)
    idx = np.argsort(-xt, axis=1, kind="stable")[:, :8]
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        v, i = out.values()
        np.testing.assert_array_equal(i, idx, err_msg=how)
        np.testing.assert_array_equal(v.astype(np.float64), np.take_along_axis(xt, idx, 1), err_msg=how)
    _no_elementwise_dma(k, 4)


def test_argmax_axis0_at_model_size_counts():
    """2048x4096 f32: no element-wise descriptor, under 12x the roofline (was 89.6x)."""
    k = nk.compile(nk.trace(lambda x: np.argmax(x, 0)).trace(np.zeros((2048, 4096), np.float32)))
    _no_elementwise_dma(k, 4)
    assert k.estimate().ratio < 12
