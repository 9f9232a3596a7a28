"""Matmul operand staging (transforms/lower/matmul_stage.py, matmul_chunks.py): Aᵀ from wide
natural loads of A with transposes packed per PSUM bank, resident B loaded by one DMA per
group of K chunks, and the K loop split into segments where each operand is one tile. Counts
are read off the NKI IR; results are compared with float64 NumPy."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllocOp, DmaCopyOp, TensorCopyOp, TransposeOp
from nkigen_lite.perf import schedule as sched
from nkigen_lite.testing import assert_close

BF16 = ml_dtypes.bfloat16


def _allocs(k, name):
    return [
        op.result.type.shape for op in k.nki.walk() if isinstance(op, AllocOp) and op.result.name_hint == name
    ]


def _dmas(k) -> int:
    return k.stats().dma_count


def test_a_row_tile_is_one_dma_and_b_one_dma_per_two_chunks():
    """1024x4096x1024 f32: A's 8 row tiles are 4 slices of 4 KiB/partition each (not 32 blocks
    of 128 x 128; not one 16 KiB/partition DMA either, since 2 such buffers would leave all of B
    -- 128 KiB/partition -- no room to stay resident: MatmulEmitter.cache_width), B (resident
    whole) is 16 DMAs of 2 K chunks (matmul_lead.py: the two lead tiles keep pace with small
    transfers), C is 8 stores; A is read and transposed once (was twice, with B resident in two
    512-column blocks: 64 DMAs, 1,024 TensorE instructions, 514.1 -> 480.7 us scheduled). The 8
    M tiles are straight code (each Aᵀ staged a tile ahead: matmul_lead.py). (bf16 A is
    DMA-transposed instead: matmul_dma_transpose.py.)"""
    a = np.zeros((1024, 4096), np.float32)
    b = np.zeros((4096, 1024), np.float32)
    k = nk.compile(lambda a, b: a @ b, a, b)
    assert _dmas(k) == 8 * 4 + 16 + 8  # A once in 4 KiB slices, B once, C
    assert _allocs(k, "a_nat") == [(128, 1024)] * 32
    assert _allocs(k, "b_cache") == [(128, 2, 1024)] * 16
    # Aᵀ in 8 tiles of 4 chunks, one PSUM bank of 4 fp32 transposes each
    assert _allocs(k, "a_t") == [(128, 4, 128)] * 64
    assert _allocs(k, "ps_t") == [(128, 4, 128)] * 64
    assert sum(isinstance(op, TransposeOp) for op in k.nki.walk()) == 8 * 32
    assert k.stats().dynamic_by_engine["tensor"] == 8 * 32 + 8 * 32 * 2  # transposes + matmuls
    assert k.stats().hbm_traffic_ratio == 1.0


@pytest.mark.parametrize(
    ("m", "kk", "n", "dtype", "tol"),
    [
        # f32, K = 35 x 128 + 20: A in 4 KiB slices (K rows > 16 KiB/partition), a partial
        # last chunk, B resident in 5 groups; tf32-free fp32 matmul, K terms: rtol 1e-4
        (256, 4500, 200, np.float32, 1e-4),
        # bf16 operands, fp32 accumulation, bf16 result: one rounding of 2^-8
        (384, 1100, 700, BF16, 1e-2),
    ],
)
def test_staged_matmuls_match_numpy(m, kk, n, dtype, tol):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, kk)).astype(dtype)
    b = (rng.standard_normal((kk, n)) / np.sqrt(kk)).astype(dtype)
    k = nk.compile(lambda a, b: a @ b, a, b)
    assert any(isinstance(op, TransposeOp) for op in k.nki.walk())  # A transposed on chip
    ref = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(k(a, b).astype(np.float64), ref, rtol=tol, atol=tol * scale)
    out = nk.simulate(k, {"a": a, "b": b})["y"].astype(np.float64)
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * scale)


def test_first_matmuls_wait_only_for_their_group_of_b():
    """With B resident in groups, the schedule starts TensorE's matmuls before all of B has
    arrived: the first matmul starts before the last B group's transfer ends."""
    a = np.zeros((1024, 4096), BF16)
    b = np.zeros((4096, 1024), BF16)
    k = nk.compile(lambda a, b: a @ b, a, b)
    s = sched.Scheduler(nk.TRN2, trace=True)
    s.run(k.nki.body)
    b_loads = [
        end
        for op, _, end in s.trace
        if isinstance(op, DmaCopyOp) and "b_cache" in str(op.operand(0).name_hint)
    ]
    first_mm = min(start for op, start, _ in s.trace if op.name == "nki.nc_matmul")
    assert len(b_loads) == 16
    assert first_mm < max(b_loads)


def test_b_transposed_on_chip_from_wide_row_blocks():
    """f32 a @ b.T (B's K contiguous, no DMA transpose for 4-byte dtypes): resident B is
    staged per group of 2 K chunks from one natural DMA per 128 rows of B (256 K columns),
    its transposes packed in a PSUM bank and evacuated by one copy per row block, not one
    DMA and one copy per 128 x 128 block; float64 NumPy on the interpreter and the simulator
    (fp32 matmul, 512 terms: rtol 1e-4)."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((256, 512)).astype(np.float32)
    b = (rng.standard_normal((384, 512)) / np.sqrt(512)).astype(np.float32)
    k = nk.compile(lambda a, b: a @ b.T, a, b)
    assert _allocs(k, "b_nat") == [(128, 256)] * 6  # 3 row blocks x 2 groups of 2 chunks
    walk = list(k.nki.walk())
    assert (
        sum(isinstance(op, TransposeOp) and op.access("data").tensor.name_hint == "b_nat" for op in walk)
        == 12
    )
    assert (
        sum(isinstance(op, TensorCopyOp) and op.access("dst").tensor.name_hint == "b_cache" for op in walk)
        == 6
    )
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert_close(k.run({"a": a, "b": b})["y"], ref, nk.float32, rtol=1e-4, what="a @ b.T f32, interpreter")
    assert_close(
        nk.simulate(k, {"a": a, "b": b})["y"], ref, nk.float32, rtol=1e-4, what="a @ b.T f32, simulator"
    )


def test_b_transposed_on_chip_with_a_partial_chunk_matches_numpy():
    """bf16 a @ b.T with K = 500 (3 full chunks from wide row blocks, the partial last chunk
    per 128 x 116 block): float64 NumPy, bf16 output tolerance."""
    rng = np.random.default_rng(10)
    a = rng.standard_normal((256, 500)).astype(BF16)
    b = (rng.standard_normal((384, 500)) / np.sqrt(500)).astype(BF16)
    k = nk.compile(lambda a, b: a @ b.T, a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert_close(k.run({"a": a, "b": b})["y"], ref, nk.bfloat16, what="a @ b.T K=500, interpreter")
    assert_close(nk.simulate(k, {"a": a, "b": b})["y"], ref, nk.bfloat16, what="a @ b.T K=500, simulator")


@pytest.fixture(scope="module")
def narrow_slices_kernel():
    """f32 a @ b.T, a (256, 4096), b (1024, 4096): B (128 KiB/partition K-major) stays resident
    whole only with A's natural slices at 4 KiB/partition (MatmulEmitter.cache_width), not the
    16 KiB whole row; the smallest shape taking that path (it is decided per partition)."""
    rng = np.random.default_rng(13)
    a = rng.standard_normal((256, 4096)).astype(np.float32)
    b = (rng.standard_normal((1024, 4096)) / 64).astype(np.float32)
    k = nk.compile(lambda a, b: a @ b.T, a, b)
    return k, {"a": a, "b": b}, a.astype(np.float64) @ b.astype(np.float64).T


def test_narrow_a_slices_keep_b_whole(narrow_slices_kernel):
    """A in 4 slices of 1,024 columns per M tile, each operand byte read once (with 16 KiB
    slices B was resident in two 512-column blocks and A read twice: 1024x4096 @ (1024x4096).T
    f32 553.0 -> 537.3 us, 1.27 -> 1.23x the roofline, traffic 1.44 -> 1.00x). fp32 matmul
    over 4,096 terms: rtol 1e-4."""
    k, feeds, ref = narrow_slices_kernel
    assert set(_allocs(k, "a_nat")) == {(128, 1024)}
    assert k.stats().hbm_traffic_ratio == 1.0
    assert_close(k.run(feeds)["y"], ref, nk.float32, rtol=1e-4, what="narrow A slices, interpreter")


def test_narrow_a_slices_keep_b_whole_simulator(narrow_slices_kernel):
    k, feeds, ref = narrow_slices_kernel
    assert_close(nk.simulate(k, feeds)["y"], ref, nk.float32, rtol=1e-4, what="narrow A slices, simulator")
