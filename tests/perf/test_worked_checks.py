"""The facts sheet §7.3 worked checks, as hand-written NKI kernels.

Expected figures are the sheet's own numbers (or recomputed from its formulas with the sheet's
literal constants: clocks 2.4 / 0.96 GHz, 23 B/ns x 16 DMA engines, 360 GB/s HBM, 78.6 TFLOPS
BF16), never from the model's code. Tolerances: 1-3 % where the sheet rounds its figures; for
DMA transfers the sheet assumes full efficiency, and the model's stated curve
(docs/costmodel.md) gives 2 KiB per partition 0.85 and 1 KiB ~0.74, so those comparisons allow
20 % / 50 % (the sheet's own ±30-50 % band, §7.4) and are also checked exactly against the curve.
"""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite.perf import estimate, kernel_stats

from .kernels import gemm, tile_add

US = 1e3  # ns per microsecond
DMA_B_PER_NS = 16 * 23  # 368 GB/s aggregate DMA (§1.6)
B0 = 2048 * (1 / 0.85 - 1)  # per-chunk overhead of the efficiency curve, bytes


def _eff_below_2k(bytes_per_partition: float) -> float:
    return bytes_per_partition / (bytes_per_partition + B0)


def test_fp32_add_on_a_128x512_tile_is_dma_bound_about_2x():
    e = estimate(tile_add(128, 512, nk.float32))
    # VectorE tensor_tensor, both inputs in SBUF: 2N = 1,024 cycles at 0.96 GHz ≈ 1.07 us
    assert e.by_engine_ns["vector"] == pytest.approx(1.07 * US, rel=0.01)
    # DMA: 3 x 256 KiB ≈ 2.1 us at 368 GB/s; 2 KiB per partition runs at efficiency 0.85
    assert e.dma_bytes == 3 * 256 * 1024
    assert e.dma_transfer_ns == pytest.approx(3 * 256 * 1024 / DMA_B_PER_NS / 0.85, rel=1e-6)
    assert e.dma_transfer_ns == pytest.approx(2.1 * US, rel=0.2)
    assert e.bound == "dma"
    assert e.by_engine_ns["dma"] >= 2 * e.by_engine_ns["vector"]  # "DMA-bound ~2x"
    assert e.lower_bound_ns == pytest.approx(e.by_engine_ns["dma"])
    # memory roofline: the same 768 KiB at 360 GB/s
    assert e.memory_roofline_ns == pytest.approx(3 * 256 * 1024 / 360, rel=1e-9)


def test_bf16_add_on_a_128x512_tile_is_still_dma_bound():
    e = estimate(tile_add(128, 512, nk.bfloat16))
    # bf16 tensor_tensor with both inputs in SBUF: max(64, N) = 512 cycles ≈ 0.53 us
    assert e.by_engine_ns["vector"] == pytest.approx(0.53 * US, rel=0.01)
    # DMA: 3 x 128 KiB ≈ 1.07 us at full efficiency; 1 KiB per partition is below 2 KiB
    assert e.dma_transfer_ns == pytest.approx(3 * 128 * 1024 / DMA_B_PER_NS / _eff_below_2k(1024), rel=1e-6)
    assert e.dma_transfer_ns == pytest.approx(1.07 * US, rel=0.5)
    assert e.bound == "dma"


def test_bf16_gemm_2048x1024x1024_is_compute_bound_at_55us():
    g = gemm(2048, 1024, 1024, nk.bfloat16)
    e = estimate(g)
    # (2048/128) x (1024/128) x (1024/512) = 256 matmuls of 213 ns each ≈ 55 us
    assert kernel_stats(g).dynamic_by_engine["tensor"] == 256
    assert e.by_engine_ns["tensor"] == pytest.approx(256 * 512 / 2.4, rel=1e-9)
    assert e.by_engine_ns["tensor"] == pytest.approx(55 * US, rel=0.01)
    # compute roofline: 4.3 GFLOP / 78.6 TFLOPS ≈ 55 us
    assert e.flops == 2 * 2048 * 1024 * 1024
    assert e.compute_roofline_ns == pytest.approx(55 * US, rel=0.01)
    # minimum HBM traffic (2048·1024 + 1024·1024 + 2048·1024)·2 B ≈ 10.5 MB ≈ 29 us
    assert e.min_hbm_bytes == (2048 * 1024 + 1024 * 1024 + 2048 * 1024) * 2
    assert e.memory_roofline_ns == pytest.approx(29 * US, rel=0.01)
    assert e.bound == "tensor"
    assert e.lower_bound_ns == pytest.approx(55 * US, rel=0.01)
    assert e.lower_bound_ratio == pytest.approx(1.0, abs=1e-6)  # SBUF blocking reaches the roofline
    # ... if engines overlapped perfectly; the kernel's single PSUM accumulator makes TensorE
    # wait for every VectorE read-out, so the schedule is longer
    assert e.lower_bound_ns < e.scheduled_ns <= e.serial_ns


def test_fp32_gemm_costs_four_times_the_bf16_matmul_time():
    e16, e32 = estimate(gemm(256, 256, 512, nk.bfloat16)), estimate(gemm(256, 256, 512, nk.float32))
    assert e32.by_engine_ns["tensor"] == pytest.approx(4 * e16.by_engine_ns["tensor"], rel=1e-12)
    # 2 x 1 x 2 = 4 matmuls of 512 columns: 4 x 4 x 512 cycles at 2.4 GHz
    assert e32.by_engine_ns["tensor"] == pytest.approx(4 * 4 * 512 / 2.4, rel=1e-9)
    # fp32 peak is a quarter of bf16's (19.7 TFLOPS)
    assert e32.compute_roofline_ns == pytest.approx(2 * 256 * 256 * 512 / 19.66e3, rel=1e-3)
