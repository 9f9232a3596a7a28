"""Reuse-aware standalone matmul (transforms/lower/matmul.py): a traffic model chooses between
M tiles outside (B reloaded per M tile) and B resident in SBUF in column blocks (A reloaded per
block). Bounds are DMA byte counts against the minimum (every input and output once)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllocOp

BF16 = ml_dtypes.bfloat16


def _matmul(m, k, n, dtype):
    z = [np.zeros((m, k), dtype), np.zeros((k, n), dtype)]
    return nk.compile(lambda a, b: a @ b, *z)


def _cache_shapes(kern):
    return [
        op.result.type.shape
        for op in kern.nki.walk()
        if isinstance(op, AllocOp) and op.loc and "b_cache" in str(op.result.name_hint)
    ]


@pytest.mark.parametrize(
    ("m", "k", "n", "bound"),
    [
        (1024, 4096, 1024, 1.1),  # both operands fit SBUF: each loaded once
        (4096, 4096, 4096, 2.0),  # B in two resident 2048-column blocks: A read twice
    ],
)
def test_bf16_matmul_traffic_within_the_issue_bounds(m, k, n, bound):
    s = _matmul(m, k, n, BF16).stats()
    a, b, c = m * k * 2, k * n * 2, m * n * 2
    assert s.min_hbm_bytes == a + b + c
    assert s.dma_bytes <= bound * s.min_hbm_bytes, s.summary()


def test_the_4096_cube_reads_a_exactly_twice_and_b_once():
    s = _matmul(4096, 4096, 4096, BF16).stats()
    a = b = c = 4096 * 4096 * 2
    assert s.dma_bytes == 2 * a + b + c


def test_a_single_row_tile_keeps_m_tiles_outside():
    # one M tile: B is streamed once anyway; no resident copy needed
    kern = _matmul(128, 4096, 1024, BF16)
    assert _cache_shapes(kern) == []
    assert kern.stats().hbm_traffic_ratio == pytest.approx(1.0)


def test_blocked_resident_b_computes_the_product():
    """f32 256x8192x512: B (16 MiB) does not fit, so it is resident in 256-column blocks and A
    is read twice, fewer bytes than reloading B for both M tiles."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 8192)).astype(np.float32)
    b = rng.standard_normal((8192, 512)).astype(np.float32)
    kern = nk.compile(lambda a, b: a @ b, a, b)
    # resident B in 256-column blocks, each held as 16 tiles of 4 K chunks (one DMA each: two
    # lead M tiles run jointly, matmul_lead.py, with at most 16 DMAs per block)
    assert _cache_shapes(kern) == [(128, 4, 256)] * 16
    s = kern.stats()
    assert s.dma_bytes == 2 * a.nbytes + b.nbytes + 256 * 512 * 4
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # fp32 products summed over K = 8192 in fp32 PSUM: error ~ sqrt(K) * 2^-24 * |terms|
    np.testing.assert_allclose(kern(a, b), ref, rtol=0, atol=1e-3 * np.abs(ref).max())
