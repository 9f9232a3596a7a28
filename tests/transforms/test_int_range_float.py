"""Value ranges through float -> integer casts (transforms/int_range.py): the interval of a cast
follows the float's (constants, casts, + - *, neg / abs / floor / ceil, clip, where, matmul),
truncated toward zero, saturated, and joined with 0 (NaN -> 0). Checked two ways: every element
the tensor interpreter computes lies in the interval (random and extreme inputs, NaN and inf
included); and the decisions the ranges drive stay exact: results compared exactly (tolerance 0)
with NumPy's int64 arithmetic wrapped to the result dtype, through nk.run, Kernel.run and
nk.simulate, the float -> int cast in the reference written out (truncate, clip, NaN -> 0)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T
from nkigen_lite.testing.exact import assert_exact_three_ways
from nkigen_lite.transforms.decompose import decompose
from nkigen_lite.transforms.int_range import float_range, int_range

RNG = np.random.default_rng(5)


def _floats(shape, scale=3e9, dtype=np.float32) -> np.ndarray:
    x = RNG.uniform(-scale, scale, shape).astype(dtype)
    x.flat[:6] = [np.nan, np.inf, -np.inf, -0.7, 0.7, -0.0]
    return x


def _cast(x, dt) -> np.ndarray:
    """The compiler's float -> int cast: truncate toward zero, saturate, NaN -> 0."""
    info = np.iinfo(dt)
    x = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=info.max, neginf=info.min)
    return np.clip(np.trunc(x), info.min, info.max).astype(dt)


PROGRAMS = {
    "clip": (lambda x: np.clip(x, -100.5, 100.7).astype(np.int32), (-100, 100)),
    "clip_scale_int8": (lambda x: (np.clip(x, -1.0, 1.0) * 127.0).astype(np.int8), (-127, 127)),
    "abs_floor": (lambda x: np.abs(np.floor(np.clip(x, -9.5, 7.5))).astype(np.uint16), (0, 10)),
    "neg_ceil": (lambda x: (-np.ceil(np.clip(x, 2.5, 5.0))).astype(np.int32), (-5, 0)),
    "where": (lambda x: np.where(x > 0, np.clip(x, 0, 3e4), -7.0).astype(np.int16), (-7, 30000)),
    "unbounded": (lambda x: x.astype(np.int32), (-(2**31), 2**31 - 1)),
    "saturates": (lambda x: (np.clip(x, -1e10, 1e10) * 2).astype(np.int16), (-32768, 32767)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_cast_ranges_hold_every_element(name):
    fn, want = PROGRAMS[name]
    x = _floats((64, 64), 300.0 if name != "saturates" else 3e9)
    g = nk.trace(fn).trace(x)
    (y,) = g.outputs.values()
    lo, hi = int_range(y)
    assert (lo, hi) == want
    (got,) = nk.run(g, {"x": x}).values()
    assert lo <= got.min() and got.max() <= hi


def test_matmul_sum_bound_covers_fp32_rounding():
    """A matmul's float bound is K times the extreme products, widened for the fp32 adds."""
    g = nk.trace(lambda a, b: a.astype(np.float32) @ b.astype(np.float32)).trace(
        np.zeros((4, 300), np.int8), np.zeros((300, 5), np.int8)
    )
    lo, hi = float_range(g.outputs["y"])
    assert -300 * 127 * 128 * 1.001 < lo <= -300 * 127 * 128
    assert 300 * 128 * 128 <= hi < 300 * 128 * 128 * 1.001


def _matmuls(fn, *args) -> tuple[int, int]:
    """(matmuls, maximum / minimum ops) after decomposition."""
    g = nk.trace(fn).trace(*args)
    decompose(g)
    ops = list(g.walk())
    return sum(isinstance(o, T.MatmulOp) for o in ops), sum(
        isinstance(o, (T.MaximumOp, T.MinimumOp)) for o in ops
    )


def test_clipped_float_operand_keeps_one_matmul():
    """Fails before: the cast's range was the full int32 one, so WideIntMatmul split both
    operands into byte digits (40 matmuls; 165 us scheduled at 256 x 512 x 256, now 40 us)."""
    fn = lambda f, b: np.clip(f, -100, 100).astype(np.int32) @ b.astype(np.int32)  # noqa: E731
    assert _matmuls(fn, np.zeros((256, 512), np.float32), np.zeros((512, 256), np.int8))[0] == 1


def test_wide_int_matmul_states_no_clamps():
    """Fails before: each K chunk's int32 sums were clamped (a maximum and a minimum) to state
    their range; the digits' ranges now give it (144 -> 130 us scheduled at 256 x 512 x 256)."""
    got = _matmuls(lambda a, b: a @ b, np.zeros((8, 512), np.int32), np.zeros((512, 8), np.int32))
    assert got == (2 * 10, 0)


def _exact(fn, want, **feed):
    assert_exact_three_ways(nk.trace(fn).trace(*feed.values()), feed, want)


@pytest.mark.parametrize("lim", [1.0e9, 1.5e9])
def test_clipped_casts_add_exactly(lim):
    """1.0e9: the sum provably fits int32 (one add); 1.5e9: it may wrap (the exact sequence)."""
    f, g = _floats((64, 64)), _floats((64, 64))
    want = _cast(np.clip(f, -lim, lim), np.int32).astype(np.int64) + _cast(np.clip(g, -lim, lim), np.int32)
    fn = lambda f, g: np.clip(f, -lim, lim).astype(np.int32) + np.clip(g, -lim, lim).astype(np.int32)  # noqa: E731
    _exact(fn, want.astype(np.int32), f=f, g=g)


@pytest.mark.parametrize("lim", [1000.0, 2.0e6])
def test_clipped_cast_matmul_is_exact(lim):
    """1000: one fp32 matmul; 2e6: partial sums pass 2**24, the byte-digit matmuls."""
    f, b = _floats((64, 200)), RNG.integers(-128, 128, (200, 48)).astype(np.int8)
    want = _cast(np.clip(f, -lim, lim), np.int32).astype(np.int64) @ b.astype(np.int64)
    fn = lambda f, b: np.clip(f, -lim, lim).astype(np.int32) @ b.astype(np.int32)  # noqa: E731
    _exact(fn, want.astype(np.int32), f=f, b=b)


def test_half_precision_cast_matmul_is_exact():
    h, b = _floats((64, 64), 300.0, np.float16), RNG.integers(-128, 128, (64, 48)).astype(np.int8)
    h.flat[:3] = [1.0, 2.0, 3.0]  # no NaN / inf: h * 2 in f16 is computed the same everywhere
    want = _cast(h * np.float16(2), np.int32).astype(np.int64) @ b.astype(np.int64)
    _exact(lambda h, b: (h * 2).astype(np.int32) @ b.astype(np.int32), want.astype(np.int32), h=h, b=b)


def test_a_dtype_without_infinities_leaves_the_range_unbounded():
    """Fails before (ValueError): 1000 rounds to NaN in fp8 e4m3fn, which has no infinity."""
    b = nk.Builder("g")
    x = b.add_input("x", (4, 4), nk.float32)
    clipped = b.minimum(b.maximum(x, -1000.0), 1000.0)
    y = b.cast(b.cast(clipped, nk.float8_e4m3fn), nk.int32)
    assert int_range(y) == (-(2**31), 2**31 - 1)
    small = b.cast(b.cast(b.minimum(b.maximum(x, -100.0), 100.0), nk.float8_e4m3fn), nk.int32)
    assert int_range(small) == (-112, 112)  # 100 -> 96 (a tie: to even), widened for the fp32 step
