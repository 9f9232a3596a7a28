"""Lead M tiles (transforms/lower/matmul_lead.py): with B resident, the first three M tiles
(two when B is transposed on TensorE) run jointly over each K chunk of B as it arrives, B is
loaded in small groups with the leads' Aᵀ groups between them, every later tile's Aᵀ is staged
one tile ahead (before the previous tile's stores), and Aᵀ's transposes, when TensorE does them (fp32),
are evacuated on ScalarE (bf16 A is DMA-transposed: matmul_dma_transpose.py). Counts are read
off the NKI IR; results are compared with float64 NumPy (interpreter and simulator)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import (
    AllocOp,
    DmaCopyOp,
    DmaTransposeOp,
    ForiLoopOp,
    MatmulOp,
    TensorCopyOp,
    TransposeOp,
)

BF16 = ml_dtypes.bfloat16


def _top_level_until_first_evacuation(k):
    """The kernel's top-level instructions (loops flattened once per static copy) up to the
    first copy out of a matmul accumulator."""
    out = []

    def walk(block):
        for op in block:
            if isinstance(op, ForiLoopOp):
                if walk(op.body):
                    return True
                continue
            if isinstance(op, TensorCopyOp) and op.access("src").tensor.name_hint == "acc":
                return True
            out.append(op)
        return False

    walk(k.nki.body)
    return out


def _bf16_matmul(m, kk, n):
    return nk.compile(lambda a, b: a @ b, np.zeros((m, kk), BF16), np.zeros((kk, n), BF16))


def test_two_lead_tiles_accumulate_before_the_first_evacuation():
    k = _bf16_matmul(1024, 4096, 1024)
    ops = _top_level_until_first_evacuation(k)
    mms = [op for op in ops if isinstance(op, MatmulOp)]
    # 3 M tiles x 32 K chunks x 2 PSUM banks of 512 columns (one M tile alone: 64)
    assert len({op.access("dst").tensor for op in mms}) == 3 * 2
    # the 3 tiles' Aᵀ loaded jointly, K chunks in groups of 2, 6, 8, 8, 8: one tile per group
    assert len({op.access("stationary").tensor for op in mms}) == 5
    # the first K chunk feeds all lead tiles before the second chunk is read
    first = [op.access("stationary") for op in mms[: 3 * 2]]
    assert len({(id(a.tensor), str(a.dims)) for a in first}) == 3  # one column window per tile
    # executed: all 32 chunks of both lead tiles (the K loops run 1 or 2 chunks per segment);
    # matmuls only: A is DMA-transposed
    st = k.stats()
    assert st.dynamic_by_engine["tensor"] == 8 * 32 * 2


def test_b_is_loaded_in_sixteen_small_groups_between_the_leads_a_groups():
    k = _bf16_matmul(1024, 4096, 1024)
    top = [op for op in k.nki.body if isinstance(op, DmaCopyOp)]
    names = [str(op.access("dst").tensor.name_hint) for op in top]
    # Aᵀ of the three lead tiles jointly (one DMA transpose per group of 2, 6, 8, 8, 8 K
    # chunks), each group just before the first DMA of B (2 K chunks) that needs it; then Aᵀ
    # of the next tile (4 DMA transposes of 8 chunks), issued before the lead tiles' three
    # stores (so no load queues behind a store), and so on one tile ahead
    b4 = ["b_cache"] * 4
    assert names[:21] == ["a_t", "b_cache", "a_t"] + b4[:3] + (["a_t"] + b4) * 3
    assert all(isinstance(op, DmaTransposeOp) for op, n in zip(top, names) if n == "a_t")
    assert names[21:28] == ["a_t"] * 4 + ["y"] * 3
    assert names[28:33] == ["a_t"] * 4 + ["y"]
    assert all(
        op.access("dst").tensor.type.shape == (128, 2, 1024)
        for op in top
        if op.access("dst").tensor.name_hint == "b_cache"
    )


def test_at_transposes_are_evacuated_on_scalar_and_c_on_vector():
    # fp32 A (no DMA transpose for 4-byte dtypes): TensorE transposes, 4 per PSUM bank
    k = nk.compile(lambda a, b: a @ b, np.zeros((1024, 1024), np.float32), np.zeros((1024, 1024), np.float32))
    copies = [op for op in k.nki.walk() if isinstance(op, TensorCopyOp)]
    from_t = [op.attrs["engine"] for op in copies if op.access("src").tensor.name_hint == "ps_t"]
    from_acc = [op.attrs["engine"] for op in copies if op.access("src").tensor.name_hint == "acc"]
    assert from_t and set(from_t) == {"scalar"}
    assert from_acc and set(from_acc) == {"vector"}
    # one transpose per 128 x 128 block of A: half a transpose per matmul (2 banks per chunk);
    # the 8 M tiles are straight code (each Aᵀ staged a tile ahead)
    transposes = k.stats().dynamic_by_engine["tensor"] - 8 * 8 * 2
    assert transposes == 8 * 8
    assert sum(isinstance(op, TransposeOp) for op in k.nki.walk()) == 8 * 8


def test_a_block_wider_than_half_the_banks_keeps_one_lead_tile():
    # 4096 columns: one N block takes 4 banks, two blocks would leave none for A's transposes;
    # K = 256 (2 chunks) is too short to narrow the block for two lead tiles
    k = _bf16_matmul(512, 256, 4096)
    shapes = [
        op.result.type.shape
        for op in k.nki.walk()
        if isinstance(op, AllocOp) and op.result.name_hint == "b_cache"
    ]
    assert shapes == [(128, 2, 2048)] * 2  # K = 256: 2 chunks; one cache per 4-bank N block
    ops = _top_level_until_first_evacuation(k)
    assert len({op.access("dst").tensor for op in ops if isinstance(op, MatmulOp)}) == 4  # one tile


@pytest.mark.parametrize(
    ("m", "kk", "n", "dtype", "tol"),
    [
        # 3 M tiles (128, 128, 44): both lead tiles full, the follower is the remainder; a
        # partial K chunk; bf16 operands, fp32 accumulation, one bf16 rounding of the result
        (300, 700, 640, BF16, 1e-2),
        # lead tiles of 128 and 72 rows and nothing after them; 3 PSUM banks per block
        (200, 384, 1300, BF16, 1e-2),
        # 8 M tiles, f32 (fp32 matmul, K = 512 terms: rtol 1e-4), the loop after the follower
        (1024, 512, 384, np.float32, 1e-4),
    ],
)
def test_lead_tile_matmuls_match_numpy(m, kk, n, dtype, tol):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((m, kk)).astype(dtype)
    b = (rng.standard_normal((kk, n)) / np.sqrt(kk)).astype(dtype)
    k = nk.compile(lambda a, b: a @ b, a, b)
    assert any(op.result.name_hint == "b_cache" for op in k.nki.walk() if isinstance(op, AllocOp))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(k(a, b).astype(np.float64), ref, rtol=tol, atol=tol * scale)
    out = nk.simulate(k, {"a": a, "b": b})["y"].astype(np.float64)
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * scale)
