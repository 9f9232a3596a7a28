"""Exact int32 / uint32 sums by digit planes sized to the count
(transforms/decomposition/digit_planes.py): the planes' fp32 row sums are exact, ScalarE sums
each plane (``activation`` with ``reduce_res``) while VectorE makes the next, and the plane sums
combine with NumPy's wrap-around mod 2**32. The tensor dialect keeps the input dtype for an
integer sum (NumPy gives int64 on Linux), so the reference is NumPy's int64 sum wrapped into that
dtype. Every result is compared exactly (tolerance 0) through nk.run, Kernel.run and nk.simulate;
the instruction counts of the 2048 x 4096 row sum (17,472 executed before) are asserted."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.testing.exact import assert_exact_three_ways
from nkigen_lite.transforms.decomposition.digit_planes import piece_length, plane_bits, plane_shifts

RNG = np.random.default_rng(4096)


def _values(dtype, rows: int, n: int, rng=RNG) -> np.ndarray:
    """Full-range random values with the dtype's extremes sprinkled in; row 0 all at the
    maximum and row 1 all at the minimum (the sums wrap), when there are rows enough."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (rows, n), dtype=np.int64, endpoint=True)
    x.flat[:: max(1, x.size // 7)] = info.min
    x.flat[1 :: max(1, x.size // 5)] = info.max
    if rows > 2:
        x[0] = info.max
        x[1] = info.min
    return x.astype(dtype)


def _want(x, axis=-1):
    return np.asarray(np.sum(x.astype(np.int64), axis=axis)).astype(x.dtype)


def _exact(fn, x, want):
    return assert_exact_three_ways(nk.trace(fn).trace(x), {"x": x}, want)


def test_plane_widths_follow_the_count():
    assert plane_bits(256) == 16 and plane_bits(4096) == 12 and plane_bits(65536) == 8
    i32 = np.iinfo(np.int32)
    assert plane_shifts(4096, int(i32.min), int(i32.max)) == [0, 12, 24]
    assert plane_shifts(256, int(i32.min), int(i32.max)) == [0, 16]
    assert plane_shifts(1000, -(2**15), 2**15 - 1) == [0, 14]  # an int16 range: two planes
    assert piece_length(10**6) == 2**24 // 255


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("n", [256, 257, 4096, 5000])
def test_row_sums_are_exact_across_plane_counts(dtype, n):
    x = _values(dtype, 5, n)
    _exact(lambda x: np.sum(x, axis=-1), x, _want(x))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_a_row_longer_than_one_piece_is_exact(dtype):
    """70,000 > 65,793 elements: two pieces of 8-bit planes, their halves carried."""
    x = _values(dtype, 2, 70_000)
    _exact(lambda x: np.sum(x, axis=-1), x, _want(x))


def test_sums_of_widened_int16_take_two_planes_and_are_exact():
    x = _values(np.int16, 4, 1000)
    k = _exact(lambda x: np.sum(x.astype(np.int32), axis=-1), x, _want(x.astype(np.int32)))
    text = str(k.nki)
    assert text.count("reduce_res") == 2, "int16's range needs two 14-bit-sized planes"


def test_full_sum_and_column_sum_are_exact():
    x = _values(np.int32, 130, 300)
    _exact(lambda x: np.sum(x), x, _want(x, None))
    _exact(lambda x: np.sum(x, axis=0), x, _want(x, 0))


@settings(max_examples=12, deadline=None)
@given(
    rows=st.integers(1, 4),
    n=st.integers(1, 700),
    dtype=st.sampled_from([np.int32, np.uint32]),
    seed=st.integers(0, 2**31),
)
def test_fuzzed_row_sums_are_exact(rows, n, dtype, seed):
    x = _values(dtype, rows, n, np.random.default_rng(seed))
    _exact(lambda x: np.sum(x, axis=-1), x, _want(x))


def test_int32_row_sum_2048x4096_counts():
    """Per 128-row tile: three plane ands over the 4,096 columns (two on VectorE, one on GpSimd
    against a constant tile filled once) and three ScalarE plane sums, no VectorE reduction; 17,472
    executed instructions before (limbs in 256-element chunks)."""
    k = nk.compile(lambda x: x.sum(-1), np.zeros((2048, 4096), np.int32))
    text = str(k.nki)
    trips = re.findall(r"upper = (\d+)", text)  # none: straight code (two-stage pipelined, 16 tiles)
    tiles_per_trip = 16 // int(trips[0]) if trips else 16
    assert text.count("reduce_res") == 3 * tiles_per_trip
    assert "tensor_reduce" not in text
    lines = text.splitlines()
    planes = [f"op0 = bitwise_and, operand0 = {m}, engine = vector" for m in (4095, 16773120, -16777216)]
    assert sum(any(p in x for p in planes) for x in lines) == 2 * tiles_per_trip  # two planes on VectorE
    assert sum("op = bitwise_and, engine = gpsimd" in x for x in lines) == tiles_per_trip  # one on GpSimd
    assert k.stats().instructions_dynamic <= 720
    est = k.estimate()
    assert est.by_engine_ns["gpsimd"] > 0.5 * est.by_engine_ns["vector"]  # planes shared by both
