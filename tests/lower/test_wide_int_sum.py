"""Sums of int32 / uint32 (and of narrow integers whose sum may pass 2**24) are exact with
NumPy's wrap-around (transforms/decomposition/wide_int_sum.py): the engines add in fp32, so each
value is split into 16-bit limbs summed in fp32-exact chunks of 256 and carried in int32. The
tensor dialect keeps the input dtype for an integer sum (NumPy gives int64 on Linux), so the
reference is NumPy's int64 sum wrapped into that dtype (``astype``). Every result is compared
exactly (tolerance 0) through nk.run (tensor interpreter), Kernel.run (NKI interpreter) and
nk.simulate (the simulator)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk

from .test_wide_int_cast import _three_ways

RNG = np.random.default_rng(2028)


def _values(dtype, rows: int, n: int) -> np.ndarray:
    """Row 0 full-range random; row 1 near the top of the range; row 2 near the bottom; the
    rest random."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (rows, n), dtype=np.int64, endpoint=True)
    if rows > 1:
        x[1] = info.max - RNG.integers(0, 200, n)
    if rows > 2:
        x[2] = info.min + RNG.integers(0, 200, n)
    return x.astype(dtype)


def _want(x, axis):
    """NumPy's exact sum, wrapped into x's dtype (two's complement, as astype does)."""
    return np.asarray(np.sum(x.astype(np.int64), axis=axis)).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("shape", [(1, 7), (5, 300), (130, 600), (3, 1100)])
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sum_of_wide_ints_is_exact(axis, shape, dtype):
    x = _values(dtype, *shape)
    _three_ways(lambda x: np.sum(x, axis=axis), x, _want(x, axis))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_method_sum_keepdims_of_wide_ints_is_exact(dtype):
    x = _values(dtype, 4, 520)
    want = np.sum(x.astype(np.int64), axis=1, keepdims=True).astype(dtype)
    _three_ways(lambda x: x.sum(axis=1, keepdims=True), x, want)


def test_eight_values_near_2_pow_25_sum_exactly():
    """fp32 accumulation gave 268435488."""
    x = (2**25 + np.array([[1, 3, 5, 7, 2, 4, 6, 8]])).astype(np.int32)
    assert int(x.astype(np.int64).sum()) == 268435492
    _three_ways(lambda x: np.sum(x, axis=-1), x, np.array([268435492], np.int32))
    _three_ways(lambda x: np.sum(x), x, np.array(268435492, np.int32))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_sum_wraps_like_numpy(dtype):
    info = np.iinfo(dtype)
    x = np.full((2, 300), info.max, dtype)
    x[1] = info.min
    _three_ways(lambda x: np.sum(x, axis=-1), x, _want(x, -1))


def test_long_int16_sum_is_exact():
    """An int16 sum comes back int32 (NumPy: int64); |sum| up to 2**15 * 1000 > 2**24."""
    x = _values(np.int16, 3, 1000)
    _three_ways(lambda x: np.sum(x, axis=-1), x, _want(x.astype(np.int32), -1))


def _reduces(fn, x) -> list[str]:
    text = nk.compile(nk.trace(fn).trace(x)).ir("decompose")
    return [line for line in text.splitlines() if "tensor.reduce" in line or "bitwise_and" in line]


@pytest.mark.parametrize(
    "x",
    [np.zeros((4, 300), np.float32), np.zeros((4, 300), np.int8), np.zeros((4, 256), np.int16)],
    ids=["f32", "i8", "i16-256"],
)
def test_float_and_provably_exact_narrow_sums_stay_one_reduction(x):
    assert len(_reduces(lambda x: np.sum(x, axis=-1), x)) == 1


def test_count_of_a_bool_mask_stays_one_reduction():
    x = np.zeros((4, 300), np.float32)
    assert len(_reduces(lambda x: np.sum((x > 0).astype(np.int32), axis=-1), x)) == 1
