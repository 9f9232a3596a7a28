"""Integer matmuls are exact with NumPy's wrap-around (transforms/decomposition/wide_int_matmul.py):
the Tensor engine accumulates in fp32, so 32-bit operands are split into balanced byte digits
(bf16-exact) whose pair products are summed over K chunks of 256 within 2**24 and combined in
int32; narrow results are the int32 matmul cast (wrapped). The reference is NumPy's int64
matmul wrapped into the result dtype with ``astype`` (int64 wraps mod 2**64, which keeps the
low 32 bits). Every result is compared exactly (tolerance 0) through nk.run (tensor
interpreter), Kernel.run (NKI interpreter) and nk.simulate (the simulator). Before this
decomposition each case below marked "fails before" came out wrong on the compiled kernel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T
from nkigen_lite.testing.exact import assert_exact_three_ways
from nkigen_lite.transforms.decompose import decompose

RNG = np.random.default_rng(2031)


def _values(dtype, shape, near_top: bool = False) -> np.ndarray:
    """Full-range random values (or, ``near_top``, within 200 of the range's ends)."""
    info = np.iinfo(dtype)
    if near_top:
        x = np.where(
            RNG.random(shape) < 0.5,
            info.max - RNG.integers(0, 200, shape),
            info.min + RNG.integers(0, 200, shape),
        )
    else:
        x = RNG.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True)
    return x.astype(dtype)


def _want(a, b):
    dt = np.result_type(a.dtype, b.dtype)
    dt = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32)}.get(dt, dt)
    return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dt)


def _three_ways(fn, a, b, want, ways=("nk.run", "Kernel.run", "nk.simulate")):
    assert_exact_three_ways(nk.trace(fn).trace(a, b), {"a": a, "b": b}, want, ways)


def _matmuls(fn, a, b) -> int:
    g = nk.trace(fn).trace(a, b)
    decompose(g)
    return sum(isinstance(op, T.MatmulOp) for op in g.walk())


@pytest.mark.parametrize("k", [128, 256, 512])
def test_int32_matmul_near_2_pow_31_is_exact(k):
    """Fails before: fp32 rounded both the operands and the sums."""
    a, b = _values(np.int32, (6, k), near_top=True), _values(np.int32, (k, 5), near_top=True)
    _three_ways(lambda a, b: a @ b, a, b, _want(a, b))


@pytest.mark.parametrize("dta, dtb", [(np.int32, np.int32), (np.uint32, np.uint32), (np.int32, np.uint32)])
def test_full_range_32_bit_matmul_is_exact(dta, dtb):
    a, b = _values(dta, (130, 300)), _values(dtb, (300, 7))
    _three_ways(lambda a, b: a @ b, a, b, _want(a, b))


def test_sums_just_past_2_pow_24_are_exact():
    """Fails before: 128 * 1449**2 = 268,736,128 is not an fp32 value."""
    a = np.full((2, 128), 1449, np.int32)
    b = np.full((128, 3), 1449, np.int32)
    b[0, 0] = 1450
    _three_ways(lambda a, b: a @ b, a, b, _want(a, b))


def test_batched_and_vector_int32_matmuls_are_exact():
    a, b = _values(np.int32, (2, 3, 260)), _values(np.int32, (260, 4))
    _three_ways(lambda a, b: a @ b, a, b, _want(a, b))
    v = _values(np.int32, (260,))
    _three_ways(lambda a, b: a @ b, v, b, _want(v, b))


@pytest.mark.parametrize("dt, k", [(np.int8, 128), (np.uint8, 256), (np.int16, 256), (np.uint16, 130)])
def test_narrow_integer_matmul_wraps_like_numpy(dt, k):
    """Fails before: the fp32 result saturated (or rounded) where NumPy wraps the narrow dtype."""
    a, b = _values(dt, (5, k), near_top=True), _values(dt, (k, 6), near_top=True)
    _three_ways(lambda a, b: a @ b, a, b, _want(a, b))


def test_provably_small_integer_matmuls_keep_one_fp32_matmul():
    """Range analysis: int8 operands widened to int32 with K = 1024 stay below 2**24."""
    a, b = np.ones((4, 1024), np.int8), np.ones((1024, 4), np.int8)
    widened = lambda a, b: a.astype(np.int32) @ b.astype(np.int32)  # noqa: E731
    assert _matmuls(widened, a, b) == 1
    a2 = np.ones((4, 1040), np.int8)
    assert _matmuls(widened, a2, np.ones((1040, 4), np.int8)) == 2  # 2 chunks of 1024 x 1 digit pair
    assert _matmuls(lambda a, b: a @ b, np.ones((4, 256), np.int32), np.ones((256, 4), np.int32)) == 10


@pytest.mark.parametrize(
    "dta, dtb, k, want",
    [
        (np.int16, np.int16, 1024, 2 * 4),  # 2 digits each: 4 pairs, 2 chunks of 512
        (np.int32, np.int8, 1024, 4),  # 4 digits x 1: 4 pairs, 1 chunk of 1024
        (np.uint16, np.int16, 300, 3 * 2),  # 3 digits x 2: 6 pairs, 1 chunk of 512
        (np.int32, np.int32, 300, 2 * 10),  # 4 x 4 digits: 10 pairs, 2 chunks of 256
    ],
)
def test_digits_follow_the_operand_ranges(dta, dtb, k, want):
    """Fails before: every 32-bit operand was split into 4 digits (10 pairs per K chunk of 256).
    The results stay exact (three ways)."""
    widened = lambda a, b: a.astype(np.int32) @ b.astype(np.int32)  # noqa: E731
    a, b = _values(dta, (3, k), near_top=True), _values(dtb, (k, 5), near_top=True)
    assert _matmuls(widened, a, b) == want
    _three_ways(widened, a, b, _want(a.astype(np.int32), b.astype(np.int32)))


@settings(deadline=None)
@given(
    m=st.integers(1, 5),
    k=st.integers(2, 300),
    n=st.integers(2, 5),
    seed=st.integers(0, 2**32 - 1),
    dts=st.sampled_from([(np.int32, np.int32), (np.uint32, np.uint32), (np.int16, np.int32)]),
)
def test_random_integer_matmuls_match_numpy(m, k, n, seed, dts):
    rng = np.random.default_rng(seed)
    a, b = (
        rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, s, dtype=np.int64, endpoint=True).astype(dt)
        for dt, s in zip(dts, ((m, k), (k, n)))
    )
    _three_ways(lambda a, b: a @ b, a, b, _want(a, b), ways=("nk.run", "Kernel.run"))


def test_the_fuzz_case_wraps_like_numpy():
    """The long integer_and_bool run's failure: an int32 square of 128 x 128 matmul results
    (the kernel saturated to 2**31 - 1 where NumPy wraps; now both wrap)."""
    b = nk.Builder("g")
    x = b.add_input("x", (1, 128, 128), nk.int32)
    sq = x * x
    m = b.matmul(sq, sq)
    b.set_outputs({"y0": m * m, "y1": m})
    x2 = np.random.default_rng(0).integers(-9, 10, (1, 128, 128)).astype(np.int32)
    want = nk.run(b.graph, {"x": x2})
    got = nk.compile(b.graph).run({"x": x2})
    for name in ("y0", "y1"):
        np.testing.assert_array_equal(got[name], want[name])
