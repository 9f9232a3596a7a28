"""A streamed ``x @ W.T`` whose K leaves a partial last chunk of 32 or 64 columns (gpt-oss QKV:
K = 2880 = 22.5 chunks) is DMA-transposed through a tail window
(transforms/lower/matmul_dma_transpose.py, ``tail_window``): the full chunks as usual, the last
chunk as the 128-column window [K - 128, K) with the matmul contracting over its last r
partitions. Counts at model size (compile only); results against float64 NumPy on the NKI
interpreter and the simulator at small shapes, bf16 output tolerance (nkigen_lite.testing),
weights scaled by 1/sqrt(K) so outputs stay O(1)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaTransposeOp, MatmulOp, TransposeOp
from nkigen_lite.testing import assert_close

BF16 = ml_dtypes.bfloat16


def _count(kern, cls):
    return sum(isinstance(op, cls) for op in kern.nki.walk())


def test_qkv_projection_k2880_streams_dma_transposed_weights():
    """x (8, 2880) @ W.T, W (5120, 2880) bf16: W arrives in 23 DMA transposes per PSUM block
    of columns (2048, 2048, 1024), no TensorE transpose of W (only x's 23 chunks and its tail
    window), 23 K chunks x 10 PSUM banks of matmuls; W's last 64 columns are read twice (the
    window overlaps the last full chunk) and x's window once: traffic = minimum + 5120 x 64 x 2
    + 8 x 128 x 2 B. Before: 920
    128 x 128 natural loads with 256-byte runs and TensorE transposes, 3.72x the roofline."""
    x, w = np.zeros((8, 2880), BF16), np.zeros((5120, 2880), BF16)
    k = nk.compile(lambda x, w: x @ w.T, x, w)
    st = k.stats()
    windows = [
        op
        for op in k.nki.walk()
        if isinstance(op, DmaTransposeOp) and op.access("dst").tensor.name_hint == "b_tail"
    ]
    # one window per PSUM block of columns: the two 2048-column blocks' fori_loop body, the 1024
    assert len(windows) == 2
    assert _count(k, TransposeOp) == 23 + 1  # x's chunks and x's window, nothing of W
    assert st.dynamic_by_engine["tensor"] == 23 * 10 + 24  # matmuls + x's transposes
    assert st.dma_bytes == st.min_hbm_bytes + 5120 * 64 * 2 + 8 * 128 * 2  # + x's window
    assert st.dma_count < 80
    assert k.estimate().ratio < 1.5


@pytest.mark.parametrize(
    ("t", "kdim", "n", "bias"),
    [(8, 320, 256, False), (1, 320, 256, True), (32, 160, 512, True), (5, 2880, 64, True)],
    ids=["t8-k320", "t1-k320-bias", "t32-k160-bias", "t5-k2880-bias"],
)
def test_tail_window_matches_float64(t, kdim, n, bias):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((t, kdim)).astype(BF16)
    w = (rng.standard_normal((n, kdim)) / np.sqrt(kdim)).astype(BF16)
    feeds = {"x": x, "w": w}
    if bias:
        feeds["b"] = rng.standard_normal(n).astype(BF16)
        k = nk.compile(lambda x, w, b: x @ w.T + b, *feeds.values())
    else:
        k = nk.compile(lambda x, w: x @ w.T, *feeds.values())
    # the partial chunk's matmuls read the window's last K % 128 partitions
    mm = [op for op in k.nki.walk() if isinstance(op, MatmulOp)]
    tail = [op for op in mm if op.access("stationary").tensor.name_hint == "a_tail"]
    assert tail and all(op.access("moving").partitions == kdim % 128 for op in tail)
    assert _count(k, DmaTransposeOp) >= 2
    ref = x.astype(np.float64) @ w.astype(np.float64).T
    if bias:
        ref = ref + feeds["b"].astype(np.float64)
    assert_close(k.run(feeds)["y"], ref, nk.bfloat16, what="tail-window matmul, interpreter")
    assert_close(nk.simulate(k, feeds)["y"], ref, nk.bfloat16, what="tail-window matmul, simulator")


def test_tail_of_96_columns_keeps_tensor_engine_transposes():
    """K % 128 = 96: 96 partitions must start at partition 0, so no window; W goes through
    TensorE transposes as before."""
    k = nk.compile(lambda x, w: x @ w.T, np.zeros((8, 352), BF16), np.zeros((256, 352), BF16))
    assert _count(k, DmaTransposeOp) == 0 and _count(k, TransposeOp) > 0
