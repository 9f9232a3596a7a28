"""b.cumsum / b.argmax / b.argmin (composite ops, nkigen_lite/tensor/composites_index.py)
against NumPy, in the tensor interpreter and compiled (NKI interpreter): integer cumsums and
all indices exact; float cumsums within the stated tolerance (f32: 1e-5 relative to the
running sum of magnitudes; bf16: 1 bf16 ulp of that, 2**-8)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk


def _run_both(build, inputs):
    b = nk.Builder("g")
    vals = {n: b.add_input(n, a.shape, nk.get_dtype(a.dtype)) for n, a in inputs.items()}
    b.set_outputs(build(b, **vals))
    return nk.run(b.graph, inputs), nk.compile(b.graph).run(inputs)


INT_CASES = [
    ((4, 37), np.int32, 1),
    ((4, 37), np.int32, 0),
    ((3, 5, 9), np.int8, 1),
    ((2, 130), np.uint16, -1),
    ((6, 1), np.int32, -1),
    ((5, 64), np.bool_, -1),
]


@pytest.mark.parametrize("shape,dtype,axis", INT_CASES)
def test_integer_cumsum_is_exact(shape, dtype, axis):
    rng = np.random.default_rng(len(shape) + shape[-1])
    if dtype == np.bool_:
        x = rng.integers(0, 2, shape).astype(bool)
    elif dtype == np.int32:
        x = rng.integers(-(2**24), 2**24, shape).astype(np.int32)  # sums stay within int32
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    want = np.cumsum(x.astype(np.int64), axis=axis)
    want_dtype = np.uint32 if np.dtype(dtype).kind == "u" else np.int32
    for got in _run_both(lambda b, x: {"c": b.cumsum(x, axis=axis)}, {"x": x}):
        assert got["c"].dtype == want_dtype
        np.testing.assert_array_equal(got["c"].astype(np.int64), want)


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (ml_dtypes.bfloat16, 2.0**-8)])
def test_float_cumsum_matches_float64(dtype, rtol):
    x = np.random.default_rng(5).standard_normal((8, 300)).astype(dtype)
    x64 = x.astype(np.float64)
    want = np.cumsum(x64, axis=1)
    scale = np.cumsum(np.abs(x64), axis=1)  # error bound: relative to the sum of magnitudes
    for got in _run_both(lambda b, x: {"c": b.cumsum(x, axis=1)}, {"x": x}):
        assert got["c"].dtype == x.dtype
        err = np.abs(got["c"].astype(np.float64) - want)
        assert (err <= rtol * scale + 1e-6).all(), err.max()


def test_cumsum_on_numpy_and_traced():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(nk.ops.cumsum(x, axis=0), np.cumsum(x, axis=0))

    def f(x):
        return nk.ops.cumsum(x, axis=1) * 2

    np.testing.assert_array_equal(nk.compile(f, x)(x), np.cumsum(x, axis=1) * 2)


ARG_CASES = [
    ((6, 50), np.float32, 1, False),
    ((6, 50), np.float32, 0, True),
    ((4, 33), ml_dtypes.bfloat16, -1, False),
    ((4, 33), np.int32, -1, True),
    ((3, 4, 5), np.int8, 1, False),
]


@pytest.mark.parametrize("shape,dtype,axis,keepdims", ARG_CASES)
def test_argmax_argmin_take_the_first_extreme(shape, dtype, axis, keepdims):
    rng = np.random.default_rng(shape[-1])
    x = rng.integers(-4, 5, shape).astype(dtype)  # few distinct values: ties everywhere
    for got in _run_both(
        lambda b, x: {
            "mx": b.argmax(x, axis=axis, keepdims=keepdims),
            "mn": b.argmin(x, axis=axis, keepdims=keepdims),
        },
        {"x": x},
    ):
        assert got["mx"].dtype == np.int32 and got["mn"].dtype == np.int32
        np.testing.assert_array_equal(
            got["mx"], np.argmax(x.astype(np.float64), axis=axis, keepdims=keepdims)
        )
        np.testing.assert_array_equal(
            got["mn"], np.argmin(x.astype(np.float64), axis=axis, keepdims=keepdims)
        )


def test_argmax_counts_nan_as_the_extreme():
    x = np.array([[1.0, np.nan, 5.0, np.nan], [3.0, 2.0, 3.0, -1.0]], np.float32)
    for got in _run_both(lambda b, x: {"mx": b.argmax(x), "mn": b.argmin(x)}, {"x": x}):
        np.testing.assert_array_equal(got["mx"], [1, 0])
        np.testing.assert_array_equal(got["mn"], [1, 3])


def test_greedy_sampling_argmax_over_a_vocabulary_row():
    x = np.random.default_rng(2).standard_normal((1, 151936)).astype(np.float32)
    _, compiled = _run_both(lambda b, x: {"tok": b.argmax(x, axis=-1)}, {"x": x})
    np.testing.assert_array_equal(compiled["tok"], np.argmax(x, axis=-1))
