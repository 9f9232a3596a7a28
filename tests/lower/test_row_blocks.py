"""Row blocks (issue 12, row_blocks.py): softmax / log_softmax over many narrow rows with each
partition holding consecutive rows, loaded and stored in a few large DMAs instead of two per
128-row tile; and the same kernels split over the two cores of a logical NeuronCore
(nk.split_cores). Every graph is compared with a float64 NumPy reference through nk.run,
Kernel.run and nk.simulate (tolerance: the output dtype's, testing/tolerance.py); DMA counts,
descriptor sizes and bytes are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp, lnc_of
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost
from nkigen_lite.transforms.lower.row_blocks import CHUNK_BYTES, candidate_plans

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


def _dmas(k: nk.Kernel) -> list:
    return [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]


def test_softmax_16_heads_counts():
    """softmax of 1x16x128x128 f32 (benchmarks/workloads.py): at most 16 DMAs (the row-major
    lowering: 16 loads and 16 stores of one 512 B row per partition), every one over all 128
    partitions moving at least two whole rows (1 KiB) per partition, HBM traffic the minimum."""
    g = nk.trace(softmax).trace(np.zeros((1, 16, 128, 128), np.float32))
    x = (RNG.standard_normal((1, 16, 128, 128)) * 4).astype(np.float32)
    k, _ = check_three_ways(g, {"x": x}, {"y": _softmax64(x)})
    assert _blocked(k)
    dmas = _dmas(k)
    assert len(dmas) <= 16
    assert all(dma_cost(op, TRN2).partitions == 128 for op in dmas)
    assert min(dma_cost(op, TRN2).chunk_bytes for op in dmas) >= 1024
    s = k.stats()
    assert s.dma_bytes == s.min_hbm_bytes == 2 * x.nbytes


@pytest.mark.parametrize(
    "fn,ref,shape,dtype",
    [
        (log_softmax, _log_softmax64, (2, 512, 64), np.float32),
        (softmax, _softmax64, (1024, 32), np.float32),
        (softmax_f32, _softmax64, (8, 128, 128), BF16),
        (softmax, _softmax64, (7, 128, 96), np.float32),
        (softmax, _softmax64, (12, 128, 256), np.float32),
    ],
    ids=["log-softmax", "rows-32", "bf16-f32-math", "seven-rows", "wide-rows"],
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
    g = nk.trace(softmax).trace(np.zeros((8, 128, 128), np.float32))
    x = RNG.standard_normal((8, 128, 128)).astype(np.float32)
    x[:, :, 64:] = -np.inf
    x[1, 5, 0] = 80.0
    k, _ = check_three_ways(g, {"x": x}, {"y": _softmax64(x)})
    assert _blocked(k)


def test_unclaimed_shapes_keep_the_row_major_lowering():
    """Rows not a multiple of 128, six rows per partition, 1 KiB rows at 8 per partition, or
    rows of >= 2 KiB keep the row-major lowering (same results)."""
    for shape in ((200, 128), (768, 128), (1024, 256), (256, 512)):
        g = nk.trace(softmax).trace(np.zeros(shape, np.float32))
        x = RNG.standard_normal(shape).astype(np.float32)
        k, _ = check_three_ways(g, {"x": x}, {"y": _softmax64(x)})
        assert not _blocked(k), shape


def test_candidate_plans_cover_the_rows():
    """Every candidate loads every row once, in chunks of at most CHUNK_BYTES per partition
    (a single row may be wider), with no duplicate candidates."""
    for rows in range(2, 40):
        for rb in (128, 256, 512, 1024, 2000):
            plans = candidate_plans(rows, rb)
            assert plans and len({tuple(p) for p in plans}) == len(plans)
            for p in plans:
                assert sum(p) == rows and min(p) >= 1
                assert all(c == 1 or c * rb <= CHUNK_BYTES for c in p)


@pytest.mark.parametrize(
    "fn,ref,shape",
    [(softmax, _softmax64, (1, 16, 128, 128)), (log_softmax, _log_softmax64, (2, 512, 64))],
    ids=["softmax-16-heads", "log-softmax"],
)
def test_split_cores_shares_the_row_blocks(fn, ref, shape):
    """nk.split_cores on a row-block kernel (straight-line code on one core): lowered for two
    cores, the rows are two groups in a top-level loop of 2 trips, which the split gives one core
    each. Both cores' outputs match float64 NumPy on the NKI interpreter and the simulator; each
    core moves half the bytes in at most half the one-core DMAs plus two, every one of them over
    128 partitions with at least one whole row per partition."""
    g = nk.trace(fn).trace(np.zeros(shape, np.float32))
    k1 = nk.compile(g)
    assert _blocked(k1)
    assert not any(isinstance(op, ForiLoopOp) for op in k1.nki.body)  # one core: straight line
    k2 = nk.split_cores(k1, 2)
    assert lnc_of(k2.nki) == 2 and _blocked(k2)
    x = (RNG.standard_normal(shape) * 3).astype(np.float32)
    want = ref(x)
    for how, got in (("Kernel.run", k2.run({"x": x})["y"]), ("nk.simulate", nk.simulate(k2, {"x": x})["y"])):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=how)
    assert k2.stats().dma_bytes * 2 == k1.stats().dma_bytes == 2 * x.nbytes
    dmas = _dmas(k2)
    assert len(dmas) <= len(_dmas(k1)) // 2 + 2
    row = shape[-1] * 4
    assert all(dma_cost(op, TRN2).partitions == 128 and dma_cost(op, TRN2).chunk_bytes >= row for op in dmas)
    assert "pid = nl.program_id(0)" in k2.nki_source()


def test_split_cores_refuses_rows_that_do_not_halve():
    """Seven rows per partition cannot be shared out evenly: one clear BuildError."""
    g = nk.trace(softmax).trace(np.zeros((7, 128, 96), np.float32))
    k = nk.compile(g)
    assert _blocked(k)
    with pytest.raises(nk.BuildError, match=r"no top-level loop whose trip count divides by lnc 2"):
        nk.split_cores(k, 2)


def test_softmax_between_other_ops_stays_fused():
    """A softmax whose input is computed and whose result is read by another op (as in the Qwen3
    layer's attention at seq 128, 16 rows per partition) is not claimed as row blocks: claimed,
    its input and output would go through HBM. No scratch bytes; numerics against float64."""

    def masked_softmax_pv(s, m, v):
        return softmax(s + m) @ v

    shapes = {"s": (1, 16, 128, 128), "m": (1, 16, 128, 128), "v": (1, 16, 128, 64)}
    g = nk.trace(masked_softmax_pv).trace(*(np.zeros(sh, np.float32) for sh in shapes.values()))
    s, m = ((RNG.standard_normal(shapes["s"]) * 4).astype(np.float32) for _ in range(2))
    v = RNG.standard_normal(shapes["v"]).astype(np.float32)
    ref = _softmax64(np.float64(s) + np.float64(m)) @ np.float64(v)
    k, _ = check_three_ways(g, {"s": s, "m": m, "v": v}, {"y": ref})
    assert not _blocked(k)
    st = k.stats()
    assert st.dma_bytes == st.min_hbm_bytes
