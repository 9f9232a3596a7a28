"""Sums over a middle axis with the input read once and summed on TensorE
(transforms/lower/column_sums.py, issue 12 point 6).

References are float64 NumPy computed here; tolerances are float32's (testing/tolerance.py), on
the NKI interpreter (Kernel.run) and the simulator (nk.simulate). Counts asserted: HBM traffic
(the input read once), the input DMAs' contiguous descriptor size, executed instructions."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.dtypes import float32
from nkigen_lite.nki.target import TRN2
from nkigen_lite.nki.types import MemorySpace
from nkigen_lite.perf.dma_cost import dma_cost
from nkigen_lite.testing.tolerance import assert_close, tolerance_for

from .scale_helpers import check_three_ways
from .test_row_split import io_dmas

RNG = np.random.default_rng(1130)


def sum_graph(shape, axis, keepdims=False):
    return nk.trace(lambda x: x.sum(axis, keepdims=keepdims)).trace(np.zeros(shape, np.float32))


@pytest.mark.parametrize(
    "shape,axis,keepdims",
    [
        ((3, 256, 128), 1, False),
        ((4, 128, 384), 1, True),  # keepdims: the (4, 1, 384) result stored as rows
        ((2, 640, 2, 128), 1, False),  # 5 rows per partition, two dims after the axis
    ],
    ids=["3d", "3d-keepdims", "4d"],
)
def test_middle_axis_sums_match_numpy(shape, axis, keepdims):
    g = sum_graph(shape, axis, keepdims)
    x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
    k, _ = check_three_ways(g, {"x": x}, {"y": x.astype(np.float64).sum(axis, keepdims=keepdims)})
    s = k.stats()
    assert "column sums" in str(k.nki)
    assert s.dma_bytes == s.min_hbm_bytes, (s.dma_bytes, s.min_hbm_bytes)


def test_nan_and_inf_stay_in_their_column():
    """Each output column of the ones-matmul reads only its own input column."""
    x = RNG.standard_normal((3, 256, 128)).astype(np.float32)
    x[1, 7, 5] = np.nan
    x[2, 100, 9] = np.inf
    k = nk.compile(sum_graph((3, 256, 128), 1))
    assert "column sums" in str(k.nki)
    ref = x.astype(np.float64).sum(1)
    got = k.run({"x": x})["y"]
    assert np.isnan(got[1, 5]) and got[2, 9] == np.inf
    keep = np.ones_like(ref, bool)
    keep[1, 5] = keep[2, 9] = False
    rtol, atol = tolerance_for(float32)
    assert_close(got[keep], ref[keep], float32, what="other columns", rtol=rtol, atol=atol)


def test_cliff_sweep_row_counts():
    """x.sum(1) of 16x512x256 f32 (208 instructions, 125.8 us scheduled, 5.39x the roofline):
    4 loads of whole 4 KiB rows per partition, 128 matmuls, under 140 instructions."""
    k = nk.compile(sum_graph((16, 512, 256), 1))
    s = k.stats()
    assert s.dma_bytes == s.min_hbm_bytes
    loads = [op for op in io_dmas(k) if op.access("dst").space is MemorySpace.SBUF]
    assert len(loads) == 4
    for op in loads:
        cost = dma_cost(op, TRN2)
        assert cost.partitions == 128 and cost.chunk_bytes >= 4096, cost
    assert s.instructions_dynamic <= 140


@pytest.mark.parametrize(
    "fn,shape",
    [
        (lambda x: x.sum(0), (512, 256)),  # leading axis of a matrix: spread_column_sums.py
        (lambda x: x.sum(1), (3, 200, 128)),  # rows not a multiple of 128
        (lambda x: x.sum(1) * 2.0, (3, 256, 128)),  # the sum feeds another op
    ],
    ids=["leading-axis", "rows-200", "scaled"],
)
def test_not_claimed(fn, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    k = nk.compile(fn, x)
    assert "column sums" not in str(k.nki)
    assert_close(k(x), fn(x.astype(np.float64)), float32, what="fallback")
