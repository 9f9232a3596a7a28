"""Softmax over a non-last axis with the input read from HBM once
(transforms/lower/column_softmax.py, issue 12 point 6).

References are float64 NumPy computed here; tolerances are float32's (testing/tolerance.py:
the compiled runs are compared on the NKI interpreter, Kernel.run, and on the simulator,
nk.simulate). Counts asserted: HBM traffic (the input read once, the output written once),
the contiguous descriptor size of the input and output DMAs, executed instructions."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.dtypes import bfloat16, float32
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost
from nkigen_lite.tensor.builder import Builder
from nkigen_lite.testing.tolerance import assert_close, tolerance_for

from .scale_helpers import check_three_ways
from .test_row_split import io_dmas

RNG = np.random.default_rng(1128)


def ref_softmax(x, axis):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def softmax_graph(shape, axis, dtype=float32, composite=False):
    """softmax over ``axis``: the composite op, or exp(x - max) / sum written out."""
    b = Builder(f"softmax_axis{axis}")
    x = b.add_input("x", shape, dtype)
    if composite:
        y = nk.ops.softmax(x, axis=axis)
    else:
        e = b.exp(x - b.max(x, axis=axis, keepdims=True))
        y = e / b.sum(e, axis=axis, keepdims=True)
    b.set_outputs({"y": y})
    return b.graph


def assert_read_once(k: nk.Kernel, min_chunk: int) -> None:
    s = k.stats()
    assert "column softmax" in str(k.nki)
    assert s.dma_bytes == s.min_hbm_bytes, (s.dma_bytes, s.min_hbm_bytes)  # read once, write once
    for op in io_dmas(k):
        cost = dma_cost(op, TRN2)
        assert cost.partitions == 128 and cost.chunk_bytes >= min_chunk, (op, cost)


@pytest.mark.parametrize(
    "shape,axis,composite,chunk",
    [
        ((512, 256), 0, False, 1024),  # 4 rows per partition: one PSUM bank per column slice
        ((1024, 384), 0, True, 1536),  # 8 rows per partition: two banks combined online
        ((3, 256, 128), 1, False, 1024),  # the middle axis, 3 batches in one load
        ((2, 640, 2, 128), 1, False, 1024),  # 5 rows per partition: banks of 4 and 1 pieces
    ],
    ids=["axis0-1bank", "axis0-2banks-composite", "middle-3d", "middle-4d-uneven-banks"],
)
def test_column_softmax_matches_numpy(shape, axis, composite, chunk):
    g = softmax_graph(shape, axis, composite=composite)
    x = (RNG.standard_normal(shape) * 4 + 50).astype(np.float32)  # large values: the max shift matters
    k, _ = check_three_ways(g, {"x": x}, {"y": ref_softmax(x, axis)})
    assert_read_once(k, chunk)


def test_masked_columns_and_nan():
    """-inf over whole 512-row banks of a column gives zeros there (the bank's max is floored,
    no NaN); a column holding NaN is NaN as in NumPy and leaves its neighbours exact (the
    transposes move data, nothing mixes columns); a column of -inf is NaN as in NumPy."""
    x = RNG.standard_normal((1024, 256)).astype(np.float32)
    x[:600, 3] = -np.inf  # bank 0 of column 3 all -inf, bank 1 partly
    x[700:, 4] = -np.inf
    x[5, 9] = np.nan
    x[:, 200] = -np.inf
    k = nk.compile(softmax_graph((1024, 256), 0))
    assert "column softmax" in str(k.nki)
    with np.errstate(invalid="ignore"):
        ref = ref_softmax(x, 0)
    rtol, atol = tolerance_for(float32)
    for how, got in (("Kernel.run", k.run({"x": x})["y"]), ("nk.simulate", nk.simulate(k, {"x": x})["y"])):
        assert np.isnan(got[:, 9]).all() and np.isnan(got[:, 200]).all(), how
        finite = [c for c in range(256) if c not in (9, 200)]
        assert_close(got[:, finite], ref[:, finite], float32, what=how, rtol=rtol, atol=atol)
        assert (got[:600, 3] == 0).all() and (got[700:, 4] == 0).all(), how


def test_cliff_sweep_rows_counts():
    """softmax axis 0 of 2048x4096 f32 read x three times (2.0x the minimum traffic, 380
    instructions, 611.8 us scheduled) and axis 1 of 16x512x256 f32 2.38x: now both exactly the
    minimum; 2 KiB (axis 0: 512-column blocks) and 4 KiB (axis 1: whole rows) descriptors."""
    k0 = nk.compile(softmax_graph((2048, 4096), 0))
    assert_read_once(k0, 2048)
    assert k0.stats().dma_count == 16
    assert k0.stats().instructions_dynamic <= 2100
    k1 = nk.compile(softmax_graph((16, 512, 256), 1))
    assert_read_once(k1, 4096)
    assert k1.stats().dma_count == 8


@pytest.mark.parametrize(
    "shape,axis,dtype",
    [
        ((500, 256), 0, float32),  # rows not a multiple of 128
        ((512, 100), 0, float32),  # columns not a multiple of 128
        ((512, 256), 0, bfloat16),  # not float32
        ((256, 512), 1, float32),  # the last axis: the row lowerings
    ],
    ids=["rows-500", "cols-100", "bf16", "last-axis"],
)
def test_not_claimed(shape, axis, dtype):
    g = softmax_graph(shape, axis, dtype)
    k = nk.compile(g)
    assert "column softmax" not in str(k.nki)
    x = RNG.standard_normal(shape).astype(dtype.np_dtype)
    assert_close(k.run({"x": x})["y"], ref_softmax(x, axis), dtype, what="fallback")


def test_other_reader_of_an_intermediate_is_not_claimed():
    """The column max is an output too: not produced by the column softmax, so not claimed."""
    b = Builder("softmax_and_max")
    x = b.add_input("x", (512, 256), float32)
    m = b.max(x, axis=0, keepdims=True)
    e = b.exp(x - m)
    b.set_outputs({"y": e / b.sum(e, axis=0, keepdims=True), "m": m})
    xin = RNG.standard_normal((512, 256)).astype(np.float32)
    ref = {"y": ref_softmax(xin, 0), "m": xin.astype(np.float64).max(0, keepdims=True)}
    k, _ = check_three_ways(b.graph, {"x": xin}, ref, simulate=False)
    assert "column softmax" not in str(k.nki)
