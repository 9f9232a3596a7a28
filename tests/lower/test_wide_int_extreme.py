"""argmax / argmin / max / min / topk of int32 and uint32 values beyond 2**24 are exact
(transforms/decomposition/wide_int_extreme.py): the engines reduce in fp32, which rounds such
values, so each reduction is split into fp32-exact high (x & -65536) and low (x & 65535)
parts. Every result is compared exactly (tolerance 0: integers and indices) with NumPy on the
int64 input, through nk.run (tensor interpreter), Kernel.run (NKI interpreter) and nk.simulate
(the simulator)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk

RNG = np.random.default_rng(2027)


def _three_ways(fn, x, want):
    g = nk.trace(fn).trace(x)
    k = nk.compile(g)
    outs = {
        "nk.run": nk.run(g, {"x": x}),
        "Kernel.run": k.run({"x": x}),
        "nk.simulate": nk.simulate(k, {"x": x}),
    }
    for how, out in outs.items():
        got = [out[name] for name in sorted(out)]
        for i, (g_, w) in enumerate(zip(got, want)):
            assert g_.shape == np.shape(w), (how, i)
            np.testing.assert_array_equal(np.asarray(g_).astype(np.int64), w, err_msg=f"{how} result {i}")


def _values(dtype, rows: int, n: int) -> np.ndarray:
    """Row 0: full-range random; row 1: near the top of the range (values that fp32 rounds
    together, the maximum tied at two places); row 2: near the bottom (the minimum tied); row
    3: all equal at a large magnitude; the rest random."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (rows, n), dtype=np.int64, endpoint=True)
    if rows > 1:
        x[1] = info.max - RNG.integers(0, 200, n)
        x[1, [7, n - 5]] = info.max
    if rows > 2:
        x[2] = info.min + RNG.integers(0, 200, n)
        x[2, [3, n - 2]] = info.min
    if rows > 3:
        x[3] = 2**30 + 1
    return x.astype(dtype)


def _argext(f):
    return lambda axis: lambda x: f(x, axis=axis)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("rows", [1, 5, 130])
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("fn", [np.argmax, np.argmin], ids=["argmax", "argmin"])
def test_arg_extreme_of_wide_ints_is_exact(fn, axis, rows, dtype):
    x = _values(dtype, rows, 300)
    f = _argext(fn)(axis)
    _three_ways(f, x, [fn(x.astype(np.int64), axis=axis)])


def test_ties_at_large_magnitude_take_the_first_index():
    """fp32 rounds 2**30 + 1 ... 2**30 + 63 to 2**30: the first index of the true extreme wins."""
    x = (np.arange(600, dtype=np.int64) * 7919 % 300 + 2**30 + 1).reshape(2, 300).astype(np.int32)
    x[1, [10, 250]] = -(2**31) + 5  # the minimum tied
    for fn in (np.argmax, np.argmin):
        f = _argext(fn)(-1)
        _three_ways(f, x, [fn(x.astype(np.int64), axis=-1)])


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("fn", [np.max, np.min], ids=["max", "min"])
def test_max_min_of_wide_ints_is_exact(fn, dtype):
    x = _values(dtype, 5, 300)
    for axis in (-1, 0, None):
        f = _argext(fn)(axis)
        _three_ways(f, x, [fn(x.astype(np.int64), axis=axis)])


@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_int32_is_exact(largest):
    x = _values(np.int32, 4, 64)
    g = nk.trace(lambda x: nk.topk(x, 3, largest=largest)).trace(x)
    order = np.argsort(-x.astype(np.int64) if largest else x, axis=-1, kind="stable")[:, :3]
    want_v = np.take_along_axis(x.astype(np.int64), order, axis=-1)
    k = nk.compile(g)
    for how, out in (
        ("nk.run", nk.run(g, {"x": x})),
        ("Kernel.run", k.run({"x": x})),
        ("nk.simulate", nk.simulate(k, {"x": x})),
    ):
        vals, idx = (out[n] for n in k.output_names)
        np.testing.assert_array_equal(np.asarray(vals).astype(np.int64), want_v, err_msg=how)
        np.testing.assert_array_equal(idx, order, err_msg=how)


def test_narrow_ints_keep_one_reduction():
    """int16 values are exact in fp32: no high / low split (no bitwise and in the kernel)."""
    x = RNG.integers(-(2**15), 2**15, (4, 300)).astype(np.int16)
    k = nk.compile(nk.trace(lambda x: np.max(x, axis=-1)).trace(x))
    assert "bitwise_and" not in str(k.nki)
    np.testing.assert_array_equal(k.run({"x": x})["y"], np.max(x, axis=-1))
