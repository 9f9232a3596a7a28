"""int32 / uint32 +, - and * wrap mod 2**32 like NumPy in compiled kernels
(transforms/lower/wide_int_arith.py): the engines saturate or round where NumPy wraps. Compared
exactly (tolerance 0) with a reference computed in uint64 (wraps mod 2**64, then reduced mod
2**32) through nk.run, Kernel.run (NKI interpreter) and nk.simulate."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import nkigen_lite as nk

from .test_wide_int_cast import _three_ways

RNG = np.random.default_rng(2031)
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
EDGES = {
    np.int32: [2**31 - 1, -(2**31), 70000, -70000, 0x12345678, 0x9ABC, 0, 1, -1, 2**24 + 1, 65535, 65536],
    np.uint32: [
        2**32 - 1,
        0,
        2**31,
        2**31 - 1,
        70000,
        0x12345678,
        0x9ABC,
        1,
        2**24 + 1,
        65535,
        65536,
        2**16 + 1,
    ],
}


def _pair(dtype, rows: int, cols: int) -> np.ndarray:
    """(2, rows, cols) full-range random; row 0 of each holds every pair of edge values."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (2, rows, cols), dtype=np.int64, endpoint=True)
    e = np.array(EDGES[dtype], np.int64)
    a, b = np.repeat(e, len(e)), np.tile(e, len(e))
    n = min(cols, a.size)
    x[0, 0, :n], x[1, 0, :n] = a[:n], b[:n]
    if rows > 1 and a.size > cols:
        m = min(cols, a.size - n)
        x[0, 1, :m], x[1, 1, :m] = a[n : n + m], b[n : n + m]
    return x.astype(dtype)


def _want(a, b, name, dtype) -> np.ndarray:
    """a op b mod 2**32 in the 32 bits of ``dtype``, from uint64 arithmetic (mod 2**64)."""
    u = OPS[name](
        np.asarray(a).astype(np.int64).astype(np.uint64), np.asarray(b).astype(np.int64).astype(np.uint64)
    )
    return (u & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(dtype)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("shape", [(2, 144), (256, 300)])
def test_int32_arith_of_two_tensors_wraps_like_numpy(shape, dtype, name):
    x = _pair(dtype, *shape)
    _three_ways(lambda x: OPS[name](x[0], x[1]), x, _want(x[0], x[1], name, dtype))


@pytest.mark.parametrize(
    "name, k", [("add", 2**31 - 1), ("sub", 70000), ("mul", 0x9ABC), ("mul", 0x12345678), ("sub", -(2**31))]
)
def test_int32_arith_with_a_constant_wraps_like_numpy(name, k):
    x = _pair(np.int32, 3, 200)[0]
    _three_ways(lambda x: OPS[name](x, np.int32(k)), x, _want(x, k, name, np.int32))
    _three_ways(lambda x: OPS[name](np.int32(k), x), x, _want(k, x, name, np.int32))


def test_uint32_square_and_a_broadcast_column_wrap_like_numpy():
    x = _pair(np.uint32, 130, 40)
    want = _want(_want(x[0], x[0], "mul", np.uint32), x[1][:, :1], "sub", np.uint32)
    _three_ways(lambda x: x[0] * x[0] - x[1][:, :1], x, want)


def test_int16_plus_int32_wraps_like_numpy():
    x = _pair(np.int32, 4, 100)
    small = np.clip(x[1], -(2**15), 2**15 - 1).astype(np.int16)
    _three_ways(
        lambda x: x[0] + np.clip(x[1], -(2**15), 2**15 - 1).astype(np.int16),
        x,
        _want(x[0], small, "add", np.int32),
    )


def test_int32_add_costs_eleven_instructions_per_tile_and_bounded_sums_one():
    x = np.zeros((2, 1024, 1024), np.int32)
    k = nk.compile(nk.trace(lambda x: x[0] + x[1]).trace(x))
    by_engine = k.stats().static_by_engine
    assert by_engine.get("vector", 0) + by_engine.get("gpsimd", 0) == 11
    k = nk.compile(nk.trace(lambda x: (x[0] & 0xFFFF) + (x[1] & 0x7FFF0000)).trace(x))
    assert "left_shift" not in k.nki_source()


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_int32_neg_abs_and_square_wrap_like_numpy(dtype):
    x = _pair(dtype, 3, 144)[0]
    neg = _want(0, x, "sub", dtype)
    _three_ways(lambda x: -x, x, neg)
    _three_ways(lambda x: np.square(x), x, _want(x, x, "mul", dtype))
    _three_ways(lambda x: np.abs(x), x, np.maximum(x, neg) if dtype == np.int32 else x)


def test_uint16_products_wrap_like_numpy():
    """uint16 * uint16 reaches 65535**2 > 2**31 in the int32 scratch the narrow wrap starts from."""
    x = RNG.integers(0, 2**16, (2, 130, 50)).astype(np.uint16)
    x[:, 0, :3] = [[65535, 65535, 256], [65535, 2, 256]]
    want = ((x[0].astype(np.int64) * x[1]) & 0xFFFF).astype(np.uint16)
    _three_ways(lambda x: x[0] * x[1], x, want)
    _three_ways(lambda x: np.square(x[0]), x, ((x[0].astype(np.int64) ** 2) & 0xFFFF).astype(np.uint16))


def test_int32_times_a_mask_is_exact_on_every_backend():
    """The bool operand is widened to int32, so GpSimd's exact integer multiply sees integer
    tiles only (the simulator computed a uint8 operand in fp32: 1376791563 came out 1376791552)."""
    x = _pair(np.int32, 130, 70)
    _three_ways(lambda x: x[0] * (x[1] > 0), x, np.where(x[1] > 0, x[0], 0).astype(np.int32))
    _three_ways(lambda x: np.maximum(x[0], x[1] > 0), x, np.maximum(x[0], (x[1] > 0).astype(np.int32)))
