"""Batched matmuls of small instances (batched_matmul.py): attention-score shapes load each
operand with one DMA per group of instances and store each instance's C with one DMA of whole
``r·N`` runs per partition. Results are compared with float64 NumPy references (bf16 / f32
output tolerances of nkigen_lite.testing.tolerance, the absolute part scaled by the largest
reference magnitude as in tests/emit/helpers.py); DMA counts, descriptor sizes and
instruction counts are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp, MatmulOp, TransposeOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.nki.types import HbmType
from nkigen_lite.perf.dma_cost import dma_cost
from nkigen_lite.testing.tolerance import assert_close, tolerance_for

RNG = np.random.default_rng(512)
BF16 = ml_dtypes.bfloat16


def _check(fn, a, b, ref, *, simulate=False):
    k = nk.compile(nk.trace(fn).trace(a, b))
    runs = [("Kernel.run", k.run({"a": a, "b": b}))]
    if simulate:
        runs.append(("nk.simulate", nk.simulate(k, {"a": a, "b": b})))
    dt = nk.get_dtype("bfloat16" if a.dtype == BF16 else "float32")
    rtol, atol = tolerance_for(dt)
    atol *= max(1.0, float(np.abs(ref).max()))  # matmul error scales with the terms summed
    for how, got in runs:
        assert got["y"].shape == ref.shape, how
        assert_close(got["y"], ref, dt, what=how, rtol=rtol, atol=atol)
    return k


def _ref(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def _chunks(k) -> list[int]:
    return [dma_cost(op, TRN2).chunk_bytes for op in k.nki.walk() if isinstance(op, DmaCopyOp)]


@pytest.mark.parametrize("b_transposed", [False, True], ids=["a@b", "a@b.T"])
def test_attention_scores_bf16_counts(b_transposed):
    """(16, 512, 128) bf16 @ (16, 128, 512) or @ b.transpose(0, 2, 1): 8 steps of 2 instances,
    each one load of A and of B (1 KiB runs: 4 rows of 128 per partition) and one store per
    instance (4 KiB runs: rows 4p .. 4p + 3 of C on partition p); step t + 1's transposes are
    emitted before step t's matmuls. Before: 12 DMAs per instance
    (256 B load runs, 1 KiB store runs), 400 / 576 executed instructions."""
    a = RNG.standard_normal((16, 512, 128)).astype(BF16)
    if b_transposed:
        b = RNG.standard_normal((16, 512, 128)).astype(BF16)
        k = _check(lambda a, b: a @ b.transpose(0, 2, 1), a, b, _ref(a, b.transpose(0, 2, 1)))
    else:
        b = RNG.standard_normal((16, 128, 512)).astype(BF16)
        k = _check(lambda a, b: a @ b, a, b, _ref(a, b))
    s = k.stats()
    assert s.dma_count == 8 * 2 + 16
    assert s.dma_bytes == s.min_hbm_bytes
    assert sorted(set(_chunks(k))) == [1024, 4096]
    assert s.instructions_dynamic <= (368 if b_transposed else 240)
    # step 1's transposes come before step 0's matmuls (VectorE copies them meanwhile)
    ops = list(k.nki.walk())
    first_mm = next(i for i, op in enumerate(ops) if isinstance(op, MatmulOp))
    per_step = 2 * (4 + (4 if b_transposed else 0))  # 2 instances: A's 4 blocks (+ B's 4)
    assert sum(isinstance(op, TransposeOp) for op in ops[:first_mm]) == 2 * per_step


@pytest.mark.parametrize(
    "a_shape,b_shape,transposed,dtype",
    [
        ((2, 3, 256, 64), (2, 3, 64, 384), False, np.float32),  # 4-D batch, K < 128, N not a multiple of 128
        ((3, 128, 64), (3, 1024, 64), True, np.float32),  # N = 1024: two PSUM banks per row block
        ((5, 384, 32), (5, 256, 32), True, np.float32),  # odd batch, r = 3
        ((4, 256, 128), (4, 256, 128), True, BF16),  # bf16 attention scores
        ((3, 256, 384), (3, 384, 192), False, np.float32),  # K = 384: 3 chunks, rows 3q + c
        ((4, 128, 256), (4, 256, 128), False, BF16),  # probabilities @ V, K = 256
    ],
    ids=["4d-batch", "two-banks", "odd-batch", "bf16-scores", "k-chunks", "bf16-pv"],
)
def test_shapes(a_shape, b_shape, transposed, dtype):
    """Instances of other shapes, on the NKI interpreter and the simulator (the emitted module)."""
    a = RNG.standard_normal(a_shape).astype(dtype)
    b = RNG.standard_normal(b_shape).astype(dtype)
    if transposed:
        k = _check(
            lambda a, b: a @ np.swapaxes(b, -1, -2), a, b, _ref(a, np.swapaxes(b, -1, -2)), simulate=True
        )
    else:
        k = _check(lambda a, b: a @ b, a, b, _ref(a, b), simulate=True)
    s = k.stats()
    assert s.dma_bytes == s.min_hbm_bytes
    instances = int(np.prod(a_shape[:-2]))
    stores = [
        op
        for op in k.nki.walk()
        if isinstance(op, DmaCopyOp) and isinstance(op.access("dst").tensor.type, HbmType)
    ]
    assert len(stores) == instances  # one store per instance, straight (no loop)
    m, n = a_shape[-2], (b_shape[-2] if transposed else b_shape[-1])
    for op in stores:
        assert dma_cost(op, TRN2).chunk_bytes == (m // 128) * n * np.dtype(dtype).itemsize


def test_pv_bf16_counts():
    """(16, 512, 512) @ (16, 512, 128) bf16 (probabilities @ V, K = 512): B loaded with rows
    4q .. 4q + 3 on partition q (chunk c = rows 4q + c, 1 KiB runs), A's rows whole (4 KiB runs),
    Aᵀ chunks transposed from every 4th column; 8 steps of 2 instances. Before: 160 DMAs, 800
    executed instructions."""
    a = RNG.standard_normal((16, 512, 512)).astype(BF16)
    b = RNG.standard_normal((16, 512, 128)).astype(BF16)
    k = _check(lambda a, b: a @ b, a, b, _ref(a, b))
    s = k.stats()
    assert s.dma_count == 8 * 2 + 16
    assert s.dma_bytes == s.min_hbm_bytes
    assert sorted(set(_chunks(k))) == [1024, 4096]
    assert s.instructions_dynamic <= 672


@pytest.mark.parametrize("instances", [20, 21], ids=["even", "odd"])
def test_many_steps_use_a_skewed_loop(instances):
    """More than 16 steps (here one instance each: C of 8 KiB per partition): a fori_loop over
    step pairs whose loads go into two top-level tile sets in turn, each step's loads issued
    before the previous step's store (was one step per iteration, its loads queued behind the
    previous iteration's store on the in-order DMA queues)."""
    a = RNG.standard_normal((instances, 128, 16)).astype(np.float32)
    b = RNG.standard_normal((instances, 16, 2048)).astype(np.float32)
    k = _check(lambda a, b: a @ b, a, b, _ref(a, b), simulate=instances == 21)
    loops = [op for op in k.nki.walk() if isinstance(op, ForiLoopOp)]
    assert len(loops) == 1 and loops[0].attrs["upper"] == (instances - 1) // 2
    kinds = [
        "store" if isinstance(op.access("dst").tensor.type, HbmType) else "load"
        for op in loops[0].body.walk()
        if isinstance(op, DmaCopyOp)
    ]
    assert kinds == ["load", "load", "store", "load", "load", "store"]
    s = k.stats()
    assert s.dma_count == instances * 3
    assert s.dma_bytes == s.min_hbm_bytes
