"""Wrapping int32 / uint32 arithmetic under a non-negative constant mask is computed on the
leaves' low bits (transforms/decomposition/low_bits_arith.py), and integer arithmetic with a
constant whose values all lie within 2**24 runs on VectorE / ScalarE in fp32 (exact) instead of
GpSimd with a constant tile filled every iteration (lower/elementwise.py). Results are compared
exactly (tolerance 0) with NumPy's wrapped result through nk.run, Kernel.run and nk.simulate;
instruction counts of the 2048 x 4096 ``(i * 3 + 7) & 255`` (184 executed before) are asserted."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.testing.exact import assert_exact_three_ways

RNG = np.random.default_rng(255)


def _values(dtype, shape, rng=RNG) -> np.ndarray:
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True)
    x.flat[:: max(1, x.size // 7)] = info.min
    x.flat[1 :: max(1, x.size // 5)] = info.max
    return x.astype(dtype)


def _exact(fn, i):
    with np.errstate(over="ignore"):
        want = fn(i)
    return assert_exact_three_ways(nk.trace(fn).trace(i), {"i": i}, want)


PROGRAMS = {
    "(i*3+7)&255": lambda i: (i * 3 + 7) & 255,
    "(i*i-i)&1023": lambda i: (i * i - i) & 1023,
    "(-i+5)&0xFFFF": lambda i: (-i + 5) & 0xFFFF,
    "(i*12345+i)&0x7FFF": lambda i: (i * 12345 + i) & 0x7FFF,
    "255&(i*7)": lambda i: 255 & (i * 7),
    "(i*i*i+3)&0x7FFFFFFF": lambda i: (i * i * i + 3) & 0x7FFFFFFF,  # not rewritten: still wraps
}


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_masked_wrapping_arithmetic_is_exact(name, dtype):
    _exact(PROGRAMS[name], _values(dtype, (5, 300)))


def test_a_shared_intermediate_keeps_its_full_value():
    i = _values(np.int32, (3, 200))
    _exact(lambda i: ((i * 3) & 255) + (i * 3), i)


@settings(max_examples=15, deadline=None)
@given(
    a=st.integers(-(2**31), 2**31 - 1),
    b=st.integers(-(2**31), 2**31 - 1),
    bits=st.integers(1, 20),
    seed=st.integers(0, 2**31),
)
def test_fuzzed_masked_affine_is_exact(a, b, bits, seed):
    i = _values(np.int32, (2, 67), np.random.default_rng(seed))
    a32, b32, m = np.int32(a), np.int32(b), np.int32((1 << bits) - 1)
    _exact(lambda i: (i * a32 + b32) & m, i)


def test_small_in_range_int_arithmetic_uses_fp32_engines():
    """0 <= i & 255, its * 3 and + 7 all lie within 2**24: no GpSimd arithmetic, no constant
    tiles filled per iteration."""
    k = nk.compile(lambda i: (i * 3 + 7) & 255, np.zeros((256, 512), np.int32))
    lines = str(k.nki).splitlines()
    assert not any("engine = gpsimd" in x and ("op = multiply" in x or "op = add" in x) for x in lines)
    assert sum("memset" in x for x in lines) <= 1  # at most one constant tile, for a GpSimd and


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_masked_affine_with_a_gpsimd_plane_is_exact(dtype):
    """2048 columns: one of the ands runs on GpSimd against a constant tile filled once."""
    i = _values(dtype, (130, 2048))
    k = _exact(lambda i: (i * 3 + 7) & 255, i)
    assert "op = bitwise_and, engine = gpsimd" in str(k.nki)


def test_masked_affine_2048x4096_counts():
    """Per 128-row tile: the load, two ands (VectorE, GpSimd against a constant tile filled
    once), the multiply and add on ScalarE / VectorE and the store, six instructions (a wrapping
    multiply was 28 instructions and the add 11). The tile holds one row per partition: the
    group budget charges the constant tile (liveness._bit_const_bytes), so two rows do not fit."""
    k = nk.compile(lambda i: (i * 3 + 7) & 255, np.zeros((2048, 4096), np.int32))
    assert k.stats().instructions_dynamic <= 16 * 6 + 1
    lines = str(k.nki).splitlines()
    assert not any("engine = gpsimd" in x and ("op = multiply" in x or "op = add" in x) for x in lines)
    assert sum("memset" in x for x in lines) == 1


def test_gpsimd_bitwise_constants_of_different_extents_are_exact():
    """Constant tiles filled once per group are keyed by value, dtype and extents: a broadcast
    operand's and (1 x 1024 per row) and the full one's (2 x 1024) each read their own."""
    x, y = _values(np.int32, (128, 2, 1024)), _values(np.int32, (128, 1, 1024))

    def fn(x, y):
        return (x & 255) + (y & 255) + (x & 0xF0F0) + (y & 0xF0F0)

    k = assert_exact_three_ways(nk.trace(fn).trace(x, y), {"x": x, "y": y}, fn(x, y))
    assert "op = bitwise_and, engine = gpsimd" in str(k.nki)
