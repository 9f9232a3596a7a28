"""The native topk lowering (transforms/lower/topk.py: max8 / find_index8 / match_replace8 per
chunk, candidates merged) against NumPy's stable argsort of the negated values in float64, on
the tensor interpreter (nk.run), the NKI interpreter (Kernel.run) and the simulator
(nk.simulate). Values are moved, never computed, so every comparison is exact. Also: which
instances take the native path and which the decomposed one, and the HBM traffic bound."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.target import TRN2
from nkigen_lite.transforms.lower.topk import fold_factor

NEG_INF = float("-inf")


def _graph(shape, dtype, k, axis=-1):
    b = nk.Builder("topk")
    x = b.add_input("x", shape, dtype)
    v, i = b.topk(x, k, axis)
    b.set_outputs({"v": v, "i": i})
    return b.graph


def _expected(x, k, axis):
    """First k of NumPy's stable argsort of -x (float64): ties keep ascending index order."""
    xf = np.asarray(x, np.float64)
    idx = np.take(np.argsort(-xf, axis=axis, kind="stable"), np.arange(k), axis=axis)
    return np.take_along_axis(xf, idx, axis=axis), idx


def _check(got, x, k, axis):
    want_v, want_i = _expected(x, k, axis)
    assert got["i"].dtype == np.int32 and got["v"].dtype == np.asarray(x).dtype
    np.testing.assert_array_equal(got["i"], want_i)
    np.testing.assert_array_equal(np.asarray(got["v"], np.float64), want_v)


def _native(kernel) -> bool:
    return any(op.name == "nki.find_index8" for op in kernel.nki.walk())


def _data(shape, dtype, seed, *, ties=True, neg_inf=0.0):
    rng = np.random.default_rng(seed)
    if ties:  # few distinct values: ties inside chunks and across chunks
        x = rng.integers(-4, 4, shape).astype(np.float64)
    else:
        x = rng.standard_normal(shape) * 100.0
    if dtype.is_float and neg_inf:
        x[rng.random(shape) < neg_inf] = -np.inf
    return x.astype(dtype.np_dtype)


# (shape, dtype, k, axis, -inf fraction). One row per partition: 70 rows of 33,001 are 3 chunks
# of 11,001 / 11,001 / 10,999 (not a multiple of the chunk); 130 rows are a full 128-row block
# and a peeled 2. Folded (few long rows, each spread over q partitions): 4 rows of 40,000 run on
# 125 partitions of 320 elements each.
CASES = [  # (shape, dtype, k, axis, -inf fraction, folded)
    ((70, 33001), nk.float32, 8, -1, 0.0, False),
    ((70, 33001), nk.bfloat16, 16, -1, 0.3, False),
    ((70, 33001), nk.float32, 1, -1, 0.0, False),
    ((4, 40000), nk.float32, 8, -1, 0.0, True),
    ((4, 40000), nk.float32, 1, -1, 0.0, True),
    ((4, 40000), nk.bfloat16, 16, -1, 0.0, True),
    ((4, 40000), nk.bfloat16, 9, -1, 0.999, True),  # fewer finite values than k in most rows
    ((2, 40000), nk.float16, 8, -1, 0.5, True),
    ((130, 300), nk.float32, 8, -1, 0.3, False),
    ((130, 300), nk.bfloat16, 16, -1, 0.0, False),
    ((3, 12), nk.bfloat16, 12, -1, 0.2, False),  # k = n > 8: the whole stable order
    ((6, 9, 20), nk.float32, 5, 1, 0.0, False),  # axis in the middle: rows through a copy
    ((50, 6), nk.float32, 3, 0, 0.0, False),  # axis 0: rows read with a stride
    ((5, 1000), nk.int16, 9, -1, 0.0, True),
    ((70, 1000), nk.uint8, 4, -1, 0.0, False),
    ((5, 1000), nk.int8, 16, -1, 0.0, True),
]


@pytest.mark.parametrize("shape,dtype,k,axis,neg_inf,folded", CASES)
def test_native_topk_matches_stable_argsort_everywhere(shape, dtype, k, axis, neg_inf, folded):
    x = _data(shape, dtype, sum(shape) + k, neg_inf=neg_inf)
    if not dtype.is_float:
        x = np.random.default_rng(k).integers(np.iinfo(dtype.np_dtype).min, 5, shape).astype(dtype.np_dtype)
    kern = nk.compile(_graph(shape, dtype, k, axis))
    assert _native(kern)
    rows, n = int(np.prod(shape)) // shape[axis], shape[axis]
    assert (fold_factor(rows, n, k, dtype, TRN2) > 1) == folded  # both layouts are exercised
    _check(nk.run(_graph(shape, dtype, k, axis), {"x": x}), x, k, axis)
    _check(kern.run({"x": x}), x, k, axis)
    _check(nk.simulate(kern, {"x": x}), x, k, axis)


def test_distinct_values_and_negatives():
    x = _data((3, 20000), nk.float32, 1, ties=False)
    kern = nk.compile(_graph(x.shape, nk.float32, 8))
    _check(kern.run({"x": x}), x, 8, -1)


@pytest.mark.parametrize("rows", [2, 70])  # folded over partitions / one row per partition
def test_ties_across_chunks_go_to_the_lower_index(rows):
    """Every row is one value: the answer is indices 0..k-1, which lie in the first chunk (or
    partition); then the maximum appears a few times far apart: ascending indices."""
    x = np.full((rows, 33001), 7.0, np.float32)
    for k in (8, 16):
        xin = x.astype(nk.bfloat16.np_dtype) if k > 8 else x
        kern = nk.compile(_graph(x.shape, nk.bfloat16 if k > 8 else nk.float32, k))
        _check(kern.run({"x": xin}), xin, k, -1)
    y = np.zeros((rows, 33001), np.float32)
    y[:, [11000, 11001, 22003, 33000]] = 5.0
    got = nk.compile(_graph(y.shape, nk.float32, 5)).run({"x": y})
    np.testing.assert_array_equal(got["i"][-1], [11000, 11001, 22003, 33000, 0])


@pytest.mark.parametrize(
    "shape,dtype,k,why",
    [
        # fp32 with k > 8 is native now (topk_wide.py; tests/lower/test_topk_f32_wide_k.py)
        ((4, 300), nk.uint32, 9, "uint32 is not exact in fp32"),
        ((4, 300), nk.int32, 4, "int32 is not exact in fp32"),
        ((4, 6), nk.float32, 2, "fewer than 8 elements per row"),
        ((4, 300), nk.bool_, 2, "bool"),
    ],
)
def test_other_instances_take_the_decomposed_path(shape, dtype, k, why):
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 3, shape).astype(dtype.np_dtype)
    kern = nk.compile(_graph(shape, dtype, k))
    assert not _native(kern), why
    assert "tensor.topk" not in kern.ir("decompose")
    _check(kern.run({"x": x}), x, k, -1)


def test_nan_on_the_native_path_is_refused_not_guessed():
    """max8's order of NaN is undocumented: the interpreters refuse it (docs/lowering.md)."""
    x = np.zeros((2, 100), np.float32)
    x[1, 50] = np.nan
    kern = nk.compile(_graph(x.shape, nk.float32, 3))
    with pytest.raises(nk.InterpretError, match="holds NaN"):
        kern.run({"x": x})


@pytest.mark.parametrize("dtype", [nk.float32, nk.bfloat16])
def test_vocabulary_topk_reads_the_input_once(dtype):
    """128 x 151,936, k = 8: HBM traffic within 1.1x reading the input once and writing both
    outputs (the decomposed path read it about 42 times)."""
    kern = nk.compile(_graph((128, 151936), dtype, 8))
    assert _native(kern)
    once = 128 * 151936 * dtype.itemsize + 128 * 8 * (dtype.itemsize + 4)
    s = kern.stats()
    assert s.dma_bytes <= 1.1 * once
    assert s.instructions_static < 40  # chunk loop and merge: the code does not grow with n


def test_emitted_code_is_deterministic():
    a = nk.compile(_graph((4, 40000), nk.bfloat16, 16)).nki_source()
    b = nk.compile(_graph((4, 40000), nk.bfloat16, 16)).nki_source()
    assert a == b and "nisa.max8" in a and "nisa.nc_match_replace8" in a


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [nk.float32, nk.bfloat16])
def test_vocabulary_topk_matches_stable_argsort(dtype):
    x = _data((128, 151936), dtype, 0, neg_inf=0.01)
    kern = nk.compile(_graph(x.shape, dtype, 8))
    _check(kern.run({"x": x}), x, 8, -1)
    _check(nk.simulate(kern, {"x": x}), x, 8, -1)


@pytest.mark.parametrize(
    "shape,dtype,axis,keepdims",
    [
        ((3, 40000), nk.float32, -1, False),
        ((16, 20), nk.bfloat16, 0, True),
        ((2, 5, 300), nk.int16, 2, False),
    ],
)
def test_argmax_runs_on_the_native_topk(shape, dtype, axis, keepdims):
    """b.argmax becomes the index of topk(x, 1) (ArgmaxToTopk): the first maximum, as np.argmax."""
    x = _data(shape, dtype, 11)
    b = nk.Builder("argmax")
    xv = b.add_input("x", shape, dtype)
    b.set_outputs({"y": b.argmax(xv, axis=axis, keepdims=keepdims)})
    kern = nk.compile(b.graph)
    assert _native(kern) and "tensor.argmax" not in kern.ir("decompose")
    want = np.argmax(np.asarray(x, np.float64), axis=axis, keepdims=keepdims)
    for got in (nk.run(b.graph, {"x": x}), kern.run({"x": x}), nk.simulate(kern, {"x": x})):
        assert got["y"].dtype == np.int32
        np.testing.assert_array_equal(got["y"], want)


def test_greedy_argmax_reads_the_logits_once_over_every_partition():
    """argmax of one 151,936-logit row: folded over 128 partitions of 1,187 logits, the 128
    candidates merged on one partition; HBM traffic within 1.1x the logits read once (the
    partition-to-partition candidate moves are SBUF -> SBUF)."""
    b = nk.Builder("greedy")
    xv = b.add_input("x", (1, 151936), nk.float32)
    b.set_outputs({"y": b.argmax(xv, axis=-1)})
    kern = nk.compile(b.graph)
    assert fold_factor(1, 151936, 1, nk.float32, TRN2) == 128
    hbm = sum(
        op.access("src").size * 4
        for op in kern.nki.walk()
        if op.name == "nki.dma_copy" and op.access("src").space.value == "hbm"
    )
    assert hbm <= 1.1 * 151936 * 4
    x = _data((1, 151936), nk.float32, 3, ties=False)
    x[0, [7, 150000]] = 1e6  # the first of two maxima
    np.testing.assert_array_equal(kern.run({"x": x})["y"], [7])


@pytest.mark.parametrize("shape,axis", [((20000, 2), 0), ((3, 40000, 1), 1), ((2, 1000, 3), 1)])
def test_few_long_strided_rows_fall_back_to_one_row_per_partition(shape, axis):
    """Found by the long end-to-end fuzz: few long rows read with a stride (topk along a
    non-last axis) cannot be folded over partitions without a copy; they run one row per
    partition instead of crashing the lowering."""
    x = _data(shape, nk.float32, 7)
    kern = nk.compile(_graph(shape, nk.float32, 4, axis))
    assert _native(kern)
    _check(kern.run({"x": x}), x, 4, axis)
    _check(nk.simulate(kern, {"x": x}), x, 4, axis)
