"""Matmul operands whose K dim is contiguous loaded K-major by DMA transposes
(transforms/lower/matmul_dma_transpose.py): ``a @ b.T``, ``a.T @ b.T``, ``x @ W.T`` and the A of
``a @ b`` in bf16. Counts are read off the NKI IR at model sizes (compile only): TensorE runs
only the matmuls, every operand byte moves once. Results are compared with float64 NumPy on the
NKI interpreter and the simulator at small shapes, bf16 output tolerance (nkigen_lite.testing:
rtol 2^-7 of the output's rounding); operands scaled by 1/sqrt(K) so outputs stay O(1). fp32,
a K that is not a multiple of 128 and row counts that are not multiples of 16 keep the TensorE
transposes."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllocOp, DmaTransposeOp, TransposeOp
from nkigen_lite.testing import assert_close

BF16 = ml_dtypes.bfloat16


def _ops(kern, cls):
    return [op for op in kern.nki.walk() if isinstance(op, cls)]


def _allocs(kern, name):
    return [op.result.type.shape for op in _ops(kern, AllocOp) if op.result.name_hint == name]


def _zeros(*shapes, dtype=BF16):
    return [np.zeros(s, dtype) for s in shapes]


def test_a_at_b_t_runs_only_matmuls_on_tensor_engine():
    """1024x4096 @ (1024x4096).T bf16: Aᵀ of each of the 8 M tiles in 4 DMA transposes of 8 K
    chunks, B resident in 16 DMA transposes of 2 K chunks (the lead tiles' groups), no TensorE
    transpose and no PSUM transpose tile; each operand byte read once."""
    k = nk.compile(lambda a, b: a @ b.T, *_zeros((1024, 4096), (1024, 4096)))
    assert not _ops(k, TransposeOp) and not _allocs(k, "ps_t")
    tr = _ops(k, DmaTransposeOp)
    assert sum(op.access("dst").tensor.name_hint == "b_cache" for op in tr) == 16
    assert _allocs(k, "b_cache") == [(128, 2, 64, 16)] * 16
    st = k.stats()
    assert st.dynamic_by_engine["tensor"] == 8 * 32 * 2  # M tiles x K chunks x PSUM banks
    assert st.dma_bytes == st.min_hbm_bytes


def test_linear_x_at_w_t_has_no_tensor_engine_transposes():
    """The Linear layer form x (2048, 1024) @ W.T, W (4096, 1024) bf16: both operands DMA-
    transposed, TensorE runs 16 M tiles x 8 K chunks x 8 PSUM banks of matmuls and nothing
    else, minimum traffic."""
    k = nk.compile(lambda x, w: x @ w.T, *_zeros((2048, 1024), (4096, 1024)))
    assert not _ops(k, TransposeOp)
    st = k.stats()
    assert st.dynamic_by_engine["tensor"] == 16 * 8 * 8
    assert st.dma_bytes == st.min_hbm_bytes


def test_streamed_b_is_one_dma_transpose_per_k_chunk():
    """One M tile with a B larger than SBUF: B streamed per K chunk, each chunk one DMA
    transpose of a PSUM block's columns (4 banks, 2048, then the last 1024; no resident or
    prefetched copy)."""
    a, b = _zeros((16, 4096), (3072, 4096))
    k = nk.compile(lambda a, b: a @ b.T, a, b)
    assert not _ops(k, TransposeOp)
    assert set(_allocs(k, "b_k")) == {(128, 1, 128, 16), (128, 1, 64, 16)}
    assert k.stats().dynamic_by_engine["tensor"] == 32 * 6  # K chunks x PSUM banks


@pytest.mark.parametrize(
    ("fn", "shapes", "dma_t"),
    [
        # 2 M tiles, B resident (both operands transposed by DMA)
        (lambda a, b: a @ b.T, [(256, 512), (384, 512)], 2 * 1 + 2),
        # row counts multiples of 16 but not of 128: partial M tile (80 rows) and N = 176
        (lambda a, b: a @ b.T, [(208, 256), (176, 256)], 3),
        # a.T read K-major by a plain DMA, only B transposed
        (lambda a, b: a.T @ b.T, [(512, 256), (384, 512)], 2),
        # plain a @ b: A transposed by DMA, B K-major already
        (lambda a, b: a @ b, [(256, 512), (512, 384)], 2),
        # one M tile: B prefetched in pieces, each one DMA transpose
        (lambda a, b: a @ b.T, [(64, 512), (1024, 512)], 1 + 4),
        # a row pipeline: A from an elementwise producer (TensorE transposes it), W.T resident
        (lambda a, b: (a * 2.0) @ b.T, [(256, 512), (640, 512)], 1),
    ],
    ids=["a@b.T", "a@b.T-partial-tiles", "a.T@b.T", "a@b", "a@b.T-one-tile", "pipeline-x@W.T"],
)
def test_dma_transposed_matmuls_match_float64(fn, shapes, dma_t):
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(shapes[0]).astype(BF16)]
    args += [(rng.standard_normal(s) / np.sqrt(s[-1])).astype(BF16) for s in shapes[1:]]
    k = nk.compile(fn, *args)
    assert len(_ops(k, DmaTransposeOp)) == dma_t
    ref = fn(*[x.astype(np.float64) for x in args])
    feeds = {"a": args[0], "b": args[1]}
    assert_close(k.run(feeds)["y"], ref, nk.bfloat16, what="DMA-transposed matmul, interpreter")
    assert_close(nk.simulate(k, feeds)["y"], ref, nk.bfloat16, what="DMA-transposed matmul, simulator")


def test_streamed_b_matches_float64():
    """The streamed-B kernel of test_streamed_b_is_one_dma_transpose_per_k_chunk on the
    interpreter (its smallest shape: B must exceed SBUF)."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 4096)).astype(BF16)
    b = (rng.standard_normal((3072, 4096)) / 64).astype(BF16)
    k = nk.compile(lambda a, b: a @ b.T, a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert_close(k.run({"a": a, "b": b})["y"], ref, nk.bfloat16, what="streamed DMA-transposed B")


@pytest.mark.parametrize(
    ("shapes", "dtype"),
    [
        ([(256, 512), (384, 512)], np.float32),  # 4-byte: no DMA transpose in the API
        ([(256, 500), (384, 500)], BF16),  # K not a multiple of 128
        ([(200, 512), (376, 512)], BF16),  # rows not multiples of 16
    ],
    ids=["f32", "k-500", "rows-200-376"],
)
def test_other_operands_keep_tensor_engine_transposes(shapes, dtype):
    k = nk.compile(lambda a, b: a @ b.T, *_zeros(*shapes, dtype=dtype))
    assert not _ops(k, DmaTransposeOp)
    assert _ops(k, TransposeOp)


def test_batched_b_t_is_dma_transposed():
    """a @ b.transpose(0, 2, 1), (4, 1024, 1024) bf16 each: the batch dims continue the rows of
    both operands in memory, so each is one (4 x 1024, 1024) source and an instance's DMA
    transposes start at row instance x 1024; TensorE runs only the matmuls (4 x 8 M tiles x 8 K
    chunks x 2 PSUM banks). Before: TensorE transposes of both, 216.1 -> 148.3 us scheduled."""
    k = nk.compile(lambda a, b: a @ b.transpose(0, 2, 1), *_zeros((4, 1024, 1024), (4, 1024, 1024)))
    assert not _ops(k, TransposeOp) and _ops(k, DmaTransposeOp)
    st = k.stats()
    assert st.dynamic_by_engine["tensor"] == 4 * 8 * 8 * 2
    assert st.dma_bytes == st.min_hbm_bytes


@pytest.mark.parametrize(
    ("fn", "shapes", "dma_t"),
    [
        (lambda a, b: a @ b.transpose(0, 2, 1), [(3, 144, 512), (3, 208, 512)], True),
        (lambda a, b: a @ b.transpose(0, 1, 3, 2), [(2, 2, 128, 256), (2, 2, 256, 256)], True),
        # A 2-D against a batched B: B DMA-transposed, A's broadcast batch dim is not rows
        (lambda a, b: a @ b.transpose(0, 2, 1), [(256, 256), (2, 384, 256)], True),
        # B's batch dim does not continue its rows (stored (N, batch, K)): TensorE transposes
        (lambda a, b: a @ b.transpose(1, 2, 0), [(2, 256, 256), (384, 2, 256)], False),
    ],
    ids=["3d", "4d", "a-2d", "b-batch-strided"],
)
def test_batched_dma_transposes_match_float64(fn, shapes, dma_t):
    rng = np.random.default_rng(9)
    a = rng.standard_normal(shapes[0]).astype(BF16)
    b = (rng.standard_normal(shapes[1]) / 16).astype(BF16)
    k = nk.compile(fn, a, b)
    sources = {op.access("src").tensor.defining_op.operands[0].name_hint for op in _ops(k, DmaTransposeOp)}
    assert ("b" in sources) == dma_t
    ref = fn(a.astype(np.float64), b.astype(np.float64))
    feeds = {"a": a, "b": b}
    assert_close(k.run(feeds)["y"], ref, nk.bfloat16, what="batched DMA-transposed matmul, interpreter")
    assert_close(
        nk.simulate(k, feeds)["y"], ref, nk.bfloat16, what="batched DMA-transposed matmul, simulator"
    )
