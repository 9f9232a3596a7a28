"""Casts between int32 and uint32 (and from narrower signed integers to uint32) keep NumPy's
astype bits (transforms/decomposition/wide_int_cast.py): the engines copy via fp32, which
rounded values beyond 2**24 and saturated where NumPy wraps. Compared exactly (tolerance 0)
with NumPy through nk.run, Kernel.run (NKI interpreter) and nk.simulate."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk

RNG = np.random.default_rng(2029)


def _three_ways(fn, x, want):
    g = nk.trace(fn).trace(x)
    k = nk.compile(g)
    outs = {
        "nk.run": nk.run(g, {"x": x}),
        "Kernel.run": k.run({"x": x}),
        "nk.simulate": nk.simulate(k, {"x": x}),
    }
    for how, out in outs.items():
        (got,) = out.values()
        assert got.dtype == want.dtype and got.shape == want.shape, how
        np.testing.assert_array_equal(got, want, err_msg=how)


def _values(dtype, shape) -> np.ndarray:
    """Full-range random, with the range's ends, 0, +-1 and 2**24 + 1 in the first row."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True)
    edges = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, min(info.max, 2**24 + 1)]
    x[0, : len(edges)] = edges
    return x.astype(dtype)


@pytest.mark.parametrize(
    "src, dst",
    [(np.int32, np.uint32), (np.uint32, np.int32), (np.int16, np.uint32), (np.int8, np.uint32)],
)
@pytest.mark.parametrize("shape", [(2, 9), (130, 300)])
def test_cast_between_32_bit_ints_wraps_like_numpy(shape, src, dst):
    x = _values(src, shape)
    _three_ways(lambda x: x.astype(dst), x, x.astype(dst))


def test_sum_with_a_signed_dtype_of_uint32_is_exact():
    x = _values(np.uint32, (3, 400))
    want = np.sum(x.astype(np.int64), axis=1).astype(np.int32)
    _three_ways(lambda x: np.sum(x, axis=1, dtype=np.int32), x, want)


def test_cast_of_an_iota_stays_one_copy():
    def f(x):
        return x + np.arange(300, dtype=np.int32).astype(np.uint32)

    x = np.zeros((4, 300), np.uint32)
    text = nk.compile(nk.trace(f).trace(x)).ir("decompose")
    assert "bitwise_and" not in text
