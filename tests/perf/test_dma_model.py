"""The DMA model: efficiency curve, engines used, bytes, chunk size and transfer time.

Expected values use the facts sheet constants (23 B/ns per engine, 16 engines, 8 partitions per
engine, 360 GB/s HBM per core) and the curve docs/costmodel.md states: 1.0 at >= 4 KiB per
descriptor chunk, 0.85 at 2 KiB, linear in log2 between, b / (b + b0) below 2 KiB with
b0 = 2048 (1/0.85 - 1). Exact arithmetic, so the tolerance is 1e-9 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost, dma_efficiency, dma_engines_used

B0 = 2048 * (1 / 0.85 - 1)


def _dma(build):
    b = nk.nki.Builder("k")
    build(b)
    return dma_cost([o for o in b.graph.walk() if isinstance(o, DmaCopyOp)][-1], TRN2)


def load(p, f, dtype=nk.float32, tile_dtype=None):
    def build(b):
        x = b.add_input("x", (p, f), dtype)
        b.dma_copy(b.alloc((p, f), tile_dtype or dtype), x)

    return build


@pytest.mark.parametrize(
    "b,eff",
    [
        (4096, 1.0),
        (1 << 20, 1.0),
        (2048, 0.85),
        (2048 * 2**0.5, 0.925),
        (256, 256 / (256 + B0)),
        (4, 4 / (4 + B0)),
    ],
)
def test_efficiency_curve_points(b, eff):
    assert dma_efficiency(b, TRN2) == pytest.approx(eff, rel=1e-9)


def test_efficiency_is_increasing_and_time_per_byte_decreasing():
    b = np.unique(np.geomspace(1, 1 << 16, 400).round())
    eff = np.array([dma_efficiency(x, TRN2) for x in b])
    assert np.all(np.diff(eff[b < 4096]) > 0) and np.all(eff[b >= 4096] == 1.0)
    assert np.all(np.diff(b / eff) > 0)  # more bytes -> more time


@pytest.mark.parametrize("p,engines", [(1, 1), (8, 1), (9, 2), (32, 4), (100, 13), (128, 16)])
def test_one_engine_per_eight_partitions(p, engines):
    assert dma_engines_used(p, TRN2) == engines


def test_full_width_load_at_2kib_per_partition():
    c = _dma(load(128, 512))
    assert (c.bytes, c.hbm_bytes, c.partitions, c.engines, c.chunk_bytes) == (262144, 262144, 128, 16, 2048)
    assert c.transfer_ns == pytest.approx(262144 / (16 * 23 * 0.85), rel=1e-9)


def test_large_loads_are_limited_by_the_hbm_share():
    c = _dma(load(128, 2048))  # 8 KiB per partition: efficiency 1, 368 GB/s > 360 GB/s
    assert c.efficiency == 1.0
    assert c.transfer_ns == pytest.approx(128 * 2048 * 4 / 360, rel=1e-9)


def test_fewer_partitions_use_fewer_engines():
    c = _dma(load(32, 1024))  # 4 engines, 4 KiB per partition
    assert c.engines == 4
    assert c.transfer_ns == pytest.approx(32 * 1024 * 4 / (4 * 23), rel=1e-9)


def test_transposing_view_moves_one_element_per_descriptor():
    def build(b):
        x = b.add_input("x", (128, 128), nk.float32)
        b.dma_copy(b.alloc((128, 128)), b.hbm_view(x, (128, 128), (1, 128)))

    c = _dma(build)
    assert c.chunk_bytes == 4
    assert c.transfer_ns == pytest.approx(65536 / (16 * 23 * 4 / (4 + B0)), rel=1e-9)
    assert c.transfer_ns > 50 * _dma(load(128, 128)).transfer_ns


def test_row_block_of_a_wide_matrix_moves_contiguous_rows():
    def build(b):
        x = b.add_input("x", (256, 4096), nk.float32)
        b.dma_copy(b.alloc((128, 512)), x[128:256, 1024:1536])

    c = _dma(build)
    assert (c.chunk_bytes, c.engines) == (2048, 16)


def test_broadcast_moves_n_times_p_bytes():
    def build(b):
        x = b.add_input("x", (512,), nk.float32)
        b.dma_copy(b.alloc((128, 512)), b.hbm_view(x, (128, 512), (0, 1)))

    c = _dma(build)
    assert c.bytes == 128 * 512 * 4 and c.chunk_bytes == 2048


def test_casting_dma_counts_the_wider_side():
    c = _dma(load(128, 512, nk.float32, tile_dtype=nk.bfloat16))
    assert c.bytes == c.hbm_bytes == 128 * 512 * 4


def test_hbm_to_hbm_copy_counts_both_sides_of_hbm_traffic():
    def build(b):
        x = b.add_input("x", (256, 1024), nk.float32)
        b.dma_copy(b.alloc((256, 1024), nk.float32, "hbm"), x)

    c = _dma(build)
    assert c.bytes == 256 * 1024 * 4 and c.hbm_bytes == 2 * c.bytes
    assert c.transfer_ns == pytest.approx(2 * c.bytes / 360, rel=1e-9)
