"""Integer casts to 8- and 16-bit integers keep the low bits like NumPy's astype
(transforms/lower/int_narrow.py): the engines copy via fp32 and saturated (int32 70000 became
int16 32767; NumPy gives 4464). Compared exactly (tolerance 0) with a reference computed from
the low bits in int64 through nk.run, Kernel.run (NKI interpreter) and nk.simulate."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk

from .test_wide_int_cast import _three_ways, _values


def _want(x, dst) -> np.ndarray:
    """The low bits of x (two's complement), read as ``dst``."""
    bits = np.iinfo(dst).bits
    low = np.asarray(x).astype(np.int64) & ((1 << bits) - 1)
    if np.iinfo(dst).min < 0:
        low = np.where(low >= 1 << (bits - 1), low - (1 << bits), low)
    return low.astype(dst)


@pytest.mark.parametrize(
    "src, dst",
    [
        (np.int32, np.int16),
        (np.int32, np.int8),
        (np.int32, np.uint16),
        (np.int32, np.uint8),
        (np.uint32, np.int16),
        (np.uint32, np.uint8),
        (np.int16, np.int8),
        (np.int16, np.uint16),
        (np.int8, np.uint16),
        (np.uint16, np.int16),
    ],
)
@pytest.mark.parametrize("shape", [(2, 9), (256, 300)])
def test_narrowing_int_cast_wraps_like_numpy(shape, src, dst):
    x = _values(src, shape)
    if np.iinfo(src).bits == 32:
        x[1, :4] = np.array([70000, 2**24 + 1, 0x12345678, 0x9ABC]).astype(src)
        if src == np.int32:
            x[1, 4:6] = [-70000, -(2**31) + 1]
    _three_ways(lambda x: x.astype(dst), x, _want(x, dst))


def test_a_cast_whose_source_range_fits_stays_one_copy_and_others_wrap():
    def f(x):
        return (x & 0x7F).astype(np.int8), x.astype(np.int8)

    x = _values(np.int32, (4, 300))
    g = nk.trace(f).trace(x)
    k = nk.compile(g)
    got = list(k.run({"x": x}).values())
    np.testing.assert_array_equal(got[0], (x & 0x7F).astype(np.int8))
    np.testing.assert_array_equal(got[1], _want(x, np.int8))
    blocks = k.nki_source().split("\n\n")
    (first,) = [b for b in blocks if b.lstrip().startswith("# tensor.cast %cast at")]
    assert sum(line.strip().startswith("nisa.") for line in first.splitlines()) == 1  # fits int8: one copy
    assert "bitwise_xor" in k.nki_source()


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.uint8, np.uint16])
@pytest.mark.parametrize("op", ["add", "subtract", "multiply"])
def test_narrow_integer_arithmetic_wraps_like_numpy(op, dt):
    """8- and 16-bit integer + - * are computed into an int32 scratch and keep its low bits
    (elementwise._wrap_into, int_narrow.keep_low_bits): products of int16 reach 2**30, so the
    wrap must not go through fp32. Exact (tolerance 0) against NumPy's own wrapping result."""
    x = np.stack([_values(dt, (256, 300)), _values(dt, (256, 300))[::-1]])
    fn = getattr(np, op)
    with np.errstate(over="ignore"):
        want = fn(x[0], x[1])
    _three_ways(lambda x: fn(x[0], x[1]), x, want)
