"""Strided assignment in @nk.trace (``x[::2, ::3] = v``, static steps, negative too) against
NumPy's own assignment, through the tensor interpreter and compiled (NKI interpreter); values are
moved, so the comparison is exact."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk

X = np.random.default_rng(4).standard_normal((7, 9)).astype(np.float32)
V = np.random.default_rng(5).standard_normal((7, 9)).astype(np.float32)
I3 = np.random.default_rng(6).integers(-50, 50, (4, 5, 6)).astype(np.int32)

KEYS = [
    np.s_[::2, ::3],
    np.s_[1::2],
    np.s_[:, ::-2],
    np.s_[5:0:-3, 2],
    np.s_[..., 1:8:3],
    np.s_[::3, ::4],
    np.s_[-1:-8:-2, 1:2],
]


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_strided_assignment_matches_numpy(key):
    def f(x, v):
        y = x.copy()
        y[key] = v[key] * 2.0  # a value of the view's shape
        z = x.copy()
        z[key] = 5.0  # a broadcast scalar
        return y, z

    want = f(X, V)
    g = nk.trace(f).trace(X, V)
    ran = nk.run(g, {"x": X, "v": V})
    for got in ((ran["y0"], ran["y1"]), nk.compile(f, X, V)(X, V)):
        for a, w in zip(got, want):
            np.testing.assert_array_equal(a, w)


def test_strided_assignment_of_ints_in_three_dims_with_a_broadcast_row():
    def f(x):
        y = x.copy()
        y[1::2, :, ::5] = np.arange(5, dtype=np.int32)[:, None] * 100
        return y

    want = f(I3)
    np.testing.assert_array_equal(nk.compile(f, I3)(I3), want)


def test_strided_assignment_with_a_value_of_the_wrong_shape_names_the_rule():
    def f(x):
        y = x.copy()
        y[::2, ::3] = np.ones((2, 2), np.float32)
        return y

    with pytest.raises(
        nk.TraceError, match=r"could not broadcast a value of shape \(2, 2\) into shape \(4, 3\)"
    ):
        nk.trace(f).trace(X)
