"""Row blocks (issue 12, row_blocks.py): softmax / log_softmax over many narrow rows with each
partition holding consecutive rows, loaded and stored in a few large DMAs instead of two per
128-row tile. Every graph is compared with a float64 NumPy reference through nk.run,
Kernel.run and nk.simulate (tolerance: the output dtype's); DMA counts, sizes and bytes are
asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost
from nkigen_lite.transforms.lower.row_blocks import plan

from .scale_helpers import check_three_ways

RNG = np.random.default_rng(1207)
BF16 = ml_dtypes.bfloat16


def _softmax64(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _log_softmax64(x):
    x = np.asarray(x, np.float64)
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def log_softmax(x):
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def softmax_f32(x):
    """bf16 in, f32 math, bf16 out."""
    return softmax(x.astype(np.float32)).astype(x.dtype)


def _blocked(k: nk.Kernel) -> bool:
    return any(op.results and op.results[0].name_hint == "xrows" for op in k.nki.walk())


def test_softmax_16_heads_counts():
    """softmax of 1x16x128x128 f32 (benchmarks/workloads.py): 4 loads and 4 stores of whole
    rows per partition (was 16 + 16 DMAs of 512 B per partition), all 128 partitions, HBM
    traffic the minimum, descriptors >= 512 B."""
    g = nk.trace(softmax).trace(np.zeros((1, 16, 128, 128), np.float32))
    x = (RNG.standard_normal((1, 16, 128, 128)) * 4).astype(np.float32)
    k, _ = check_three_ways(g, {"x": x}, {"y": _softmax64(x)})
    assert _blocked(k)
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    assert len(dmas) == 8
    assert all(dma_cost(op, TRN2).partitions == 128 for op in dmas)
    assert min(dma_cost(op, TRN2).chunk_bytes for op in dmas) >= 512
    assert sorted(dma_cost(op, TRN2).chunk_bytes for op in dmas)[-1] >= 3072
    s = k.stats()
    assert s.dma_bytes == s.min_hbm_bytes == 2 * x.nbytes


@pytest.mark.parametrize(
    "fn,ref,shape,dtype",
    [
        (log_softmax, _log_softmax64, (2, 128, 256), np.float32),
        (softmax, _softmax64, (512, 64), np.float32),
        (softmax_f32, _softmax64, (4, 128, 128), BF16),
        (softmax, _softmax64, (3, 128, 96), np.float32),
    ],
    ids=["log-softmax", "rows-64", "bf16-f32-math", "three-rows"],
)
def test_row_blocks_match_numpy(fn, ref, shape, dtype):
    g = nk.trace(fn).trace(np.zeros(shape, dtype))
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    k, _ = check_three_ways(g, {"x": x}, {"y": ref(x.astype(np.float64))})
    assert _blocked(k)
    s = k.stats()
    assert s.dma_bytes == s.min_hbm_bytes


def test_masked_entries():
    """-inf entries (masked scores) give 0 as in NumPy; a row's max still subtracts first."""
    g = nk.trace(softmax).trace(np.zeros((2, 128, 128), np.float32))
    x = RNG.standard_normal((2, 128, 128)).astype(np.float32)
    x[:, :, 64:] = -np.inf
    x[1, 5, 0] = 80.0
    k, _ = check_three_ways(g, {"x": x}, {"y": _softmax64(x)})
    assert _blocked(k)


def test_unclaimed_shapes_keep_the_row_major_lowering():
    """Rows not a multiple of 128, one row per partition, or rows of >= 2 KiB keep the
    row-major lowering (same results)."""
    for shape in ((200, 128), (128, 128), (256, 512)):
        g = nk.trace(softmax).trace(np.zeros(shape, np.float32))
        x = RNG.standard_normal(shape).astype(np.float32)
        k, _ = check_three_ways(g, {"x": x}, {"y": _softmax64(x)})
        assert not _blocked(k)


def test_plan_covers_the_rows():
    """Chunks of about 4 KiB per partition, then 2 and 1 rows; every row once."""
    assert plan(16, 512) == [7, 6, 2, 1]
    assert plan(2, 512) == [1, 1]
    assert plan(3, 384) == [2, 1]
    for rows in range(2, 40):
        for rb in (128, 256, 512, 1024, 2000):
            p = plan(rows, rb)
            assert sum(p) == rows and min(p) >= 1
