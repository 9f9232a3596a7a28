"""tensor.topk / b.topk / nk.topk against an independent NumPy reference: NumPy's stable
argsort of the negated values (float64), first k. Values are moved, never computed, so every
comparison is exact (bf16 values compare as the bf16 inputs they are)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk


def _expected(x, k, axis):
    """First k of a stable descending sort (no NaN in x): argsort of -x in float64."""
    order = np.argsort(-np.asarray(x, np.float64), axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx


def _graph(shape, dtype, k, axis=-1):
    b = nk.Builder("topk")
    x = b.add_input("x", shape, dtype)
    v, i = b.topk(x, k, axis)
    b.set_outputs({"v": v, "i": i})
    return b.graph


def _data(shape, dtype, rng, ties=False):
    if ties:  # few distinct values: many ties to break by index
        return rng.integers(-3, 4, shape).astype(dtype.np_dtype)
    if dtype.is_float:
        return rng.standard_normal(shape).astype(dtype.np_dtype)
    return rng.integers(-(2**24), 2**24, shape).astype(dtype.np_dtype)


def _check(got, x, k, axis):
    want_v, want_i = _expected(x, k, axis)
    assert got["i"].dtype == np.int32
    np.testing.assert_array_equal(got["i"], want_i)
    assert got["v"].dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(got["v"], np.float64), np.asarray(want_v, np.float64))


CASES = [
    ((4, 50), nk.float32, 5, -1, False),
    ((4, 50), nk.float32, 7, -1, True),
    ((6, 40), nk.bfloat16, 4, 1, True),
    ((6, 40), nk.bfloat16, 3, 1, False),
    ((5, 33), nk.int32, 6, -1, False),
    ((5, 33), nk.int32, 4, -1, True),
    ((20, 7), nk.float32, 3, 0, True),
    ((3, 9, 4), nk.float32, 2, 1, True),
    ((3, 16), nk.float32, 16, -1, True),  # k = n: the whole stable order
    ((8, 1), nk.float32, 1, -1, False),  # one element per row
    ((1, 64), nk.int8, 8, -1, True),
]


@pytest.mark.parametrize("shape,dtype,k,axis,ties", CASES)
def test_topk_matches_stable_argsort_in_both_interpreters(shape, dtype, k, axis, ties):
    rng = np.random.default_rng(sum(shape) + k)
    x = _data(shape, dtype, rng, ties)
    g = _graph(shape, dtype, k, axis)
    _check(nk.run(g, {"x": x}), x, k, axis)
    _check(nk.compile(g).run({"x": x}), x, k, axis)


def test_topk_on_the_simulator():
    x = _data((8, 40), nk.float32, np.random.default_rng(3), ties=True)
    k = nk.compile(_graph((8, 40), nk.float32, 5))
    _check(nk.simulate(k, {"x": x}), x, 5, -1)


def test_topk_of_a_1d_vector_and_bool():
    x = np.array([0.5, 2.0, -1.0, 2.0, 7.0], np.float32)
    got = nk.compile(_graph((5,), nk.float32, 3)).run({"x": x})
    np.testing.assert_array_equal(got["i"], [4, 1, 3])
    np.testing.assert_array_equal(got["v"], [7.0, 2.0, 2.0])
    xb = np.array([[False, True, False, True]])
    got = nk.compile(_graph((1, 4), nk.bool_, 3)).run({"x": xb})
    np.testing.assert_array_equal(got["i"], [[1, 3, 0]])
    np.testing.assert_array_equal(got["v"], [[True, True, False]])


def test_nan_ranks_above_every_number_in_index_order():
    x = np.array([[1.0, np.nan, np.inf, np.nan, -np.inf, 3.0]], np.float32)
    g = _graph((1, 6), nk.float32, 5)
    for got in (nk.run(g, {"x": x}), nk.compile(g).run({"x": x}), nk.topk(x, 5)):
        got = got if isinstance(got, dict) else {"v": got[0], "i": got[1]}
        np.testing.assert_array_equal(got["i"], [[1, 3, 2, 5, 0]])
        np.testing.assert_array_equal(got["v"], [[np.nan, np.nan, np.inf, 3.0, 1.0]])


def test_negative_zero_ties_with_zero():
    x = np.array([[-0.0, 0.0, -1.0]], np.float32)
    got = nk.compile(_graph((1, 3), nk.float32, 2)).run({"x": x})
    np.testing.assert_array_equal(got["i"], [[0, 1]])


def test_nk_topk_on_numpy_arrays_and_in_a_trace():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 5, (6, 30)).astype(np.float32)
    v, i = nk.topk(x, 4)
    want_v, want_i = _expected(x, 4, -1)
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_array_equal(v, want_v)
    xb = x.astype(ml_dtypes.bfloat16)
    v, i = nk.topk(xb, 2, axis=0)
    assert v.dtype == xb.dtype and i.dtype == np.int32
    np.testing.assert_array_equal(i, _expected(xb, 2, 0)[1])

    def f(x):
        v, i = nk.topk(x, 4)
        return v * 2.0, i

    got_v, got_i = nk.compile(f, x)(x)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(got_v, want_v * 2.0)


def test_topk_round_trips_through_text():
    g = _graph((4, 10), nk.float16, 3, 0)
    text = str(g)
    assert "tensor.topk %x {k = 3, axis = 0} : tensor<3x10xf16>, tensor<3x10xi32>" in text
    assert str(nk.parse(text)) == text


@pytest.mark.parametrize(
    "k,axis,msg",
    [
        (0, -1, r"tensor\.topk: k=0 must be in \[1, 10\]"),
        (11, -1, r"tensor\.topk: k=11 must be in \[1, 10\]"),
        (2, 2, r"tensor\.topk: axis 2 is out of range for rank 2"),
        (2.0, -1, r"tensor\.topk: k must be an integer, got 2\.0"),
    ],
)
def test_bad_topk_arguments_name_the_rule(k, axis, msg):
    b = nk.Builder("bad")
    x = b.add_input("x", (4, 10), nk.float32)
    with pytest.raises(nk.BuildError, match=msg):
        b.topk(x, k, axis)


def test_topk_of_a_scalar_is_an_error():
    b = nk.Builder("bad")
    with pytest.raises(nk.BuildError, match=r"tensor\.topk: the operand .* must have at least one axis"):
        b.topk(b.add_input("x", (), nk.float32), 1)
    with pytest.raises(nk.BuildError, match=r"nk\.topk: the array must have at least one axis"):
        nk.topk(np.float32(1.0), 1)


def test_router_scale_topk_is_native_and_reads_the_input_once():
    """128 x 151,936 (vocabulary-sized rows), k = 8: kept by decompose, lowered onto max8 /
    find_index8 (transforms/lower/topk.py), reading the input once; the values run on the NKI
    interpreter in the slow test below (and in tests/lower/test_lower_topk.py)."""
    g = _graph((128, 151936), nk.float32, 8)
    k = nk.compile(g)
    assert "tensor.topk" in k.ir("decompose")
    once = 128 * 151936 * 4 + 128 * 8 * (4 + 4)  # the input read once, both outputs written
    assert k.stats().dma_bytes <= 1.1 * once


@pytest.mark.slow
def test_router_scale_topk_matches_stable_argsort():
    rng = np.random.default_rng(0)
    x = rng.integers(-50, 50, (128, 151936)).astype(np.float32)  # many ties
    k = nk.compile(_graph((128, 151936), nk.float32, 8))
    _check(k.run({"x": x}), x, 8, -1)
