"""Integer matmul operands widened from narrower integers (lower/operand_cast.py): the cast is
read by the matmul's casting loads, never stored to HBM first. Results are compared exactly
(tolerance 0) with NumPy's int64 matmul wrapped into the result dtype, through nk.run, Kernel.run
and nk.simulate; the HBM traffic of the compiled kernel is the minimum (inputs read once, the
result written once), where the cast used to be a fusion group storing an int32 copy of the
operand (element-wise transposing descriptors: 5x the minimum traffic at 256 x 512 x 256)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing.exact import assert_exact_three_ways

RNG = np.random.default_rng(77)


def _values(dtype, shape) -> np.ndarray:
    if dtype is np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True)
    x.flat[:: max(1, x.size // 7)] = info.min  # the extremes, where a staging dtype would round
    x.flat[1 :: max(1, x.size // 5)] = info.max
    return x.astype(dtype)


def _exact(fn, a, b, want):
    return assert_exact_three_ways(nk.trace(fn).trace(a, b), {"a": a, "b": b}, want)


def _widened(a, b):
    return a.astype(np.int32) @ b.astype(np.int32)


@pytest.mark.parametrize(
    "dta, dtb",
    [
        (np.int8, np.int8),
        (np.uint8, np.int8),
        (np.int16, np.int16),
        (np.uint16, np.int8),
        (np.bool_, np.uint8),
    ],
)
@pytest.mark.parametrize("mkn", [(5, 130, 7), (1, 300, 9), (130, 256, 3)])
def test_widened_narrow_integer_matmul_is_exact(dta, dtb, mkn):
    m, k, n = mkn
    a, b = _values(dta, (m, k)), _values(dtb, (k, n))
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    _exact(_widened, a, b, want)


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_narrow_result_wraps_like_numpy(dt):
    a, b = _values(dt, (9, 200)), _values(dt, (200, 6))
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(dt)
    _exact(lambda a, b: a @ b, a, b, want)


@pytest.mark.parametrize("fn", [_widened, lambda a, b: a @ b], ids=["widened", "int8_result"])
def test_int8_matmul_reads_its_operands_once(fn):
    """Fails before: the int32 copy of each operand went through HBM (traffic 5.0x / 7.4x)."""
    a, b = _values(np.int8, (256, 512)), _values(np.int8, (512, 256))
    k = nk.compile(nk.trace(fn).trace(a, b))
    assert k.stats().hbm_traffic_ratio < 1.01
