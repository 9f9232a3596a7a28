"""int32_out_of_range (nkigen_lite/testing/int_range.py) names the integer matmul whose sums
leave the range kernels compute exactly, and nothing else; the end-to-end properties reject
those inputs. int32 arithmetic that overflows wraps in kernels as in NumPy and is not flagged
(the long fuzz's int32 product of matmul results, which once saturated on the chip)."""

import numpy as np

import nkigen_lite as nk
from nkigen_lite.testing.int_range import int32_out_of_range


def _graph(fn, shape=(4, 4), dtype=nk.int32):
    b = nk.Builder("g")
    x = b.add_input("x", shape, dtype)
    b.set_outputs({"y": fn(b, x)})
    return b.graph


def test_in_range_int32_arithmetic_passes():
    g = _graph(lambda b, x: b.matmul(x, x) * 3 - x)
    assert int32_out_of_range(g, {"x": np.full((4, 4), 100, np.int32)}) is None


def test_overflowing_int32_arithmetic_is_not_flagged_and_matmul_is():
    assert int32_out_of_range(_graph(lambda b, x: x * x), {"x": np.full((4, 4), 50_000, np.int32)}) is None
    x = {"x": np.full((4, 4), 2**29, np.int32)}
    assert int32_out_of_range(_graph(lambda b, x: b.sum(x, 0)), x) is None
    low = {"x": np.full((4, 4), -(2**31), np.int32)}
    assert int32_out_of_range(_graph(lambda b, x: -x), low) is None
    assert int32_out_of_range(_graph(lambda b, x: b.matmul(x, x)), x).startswith("tensor.matmul")


def test_an_integer_matmul_beyond_fp32_exactness_is_named():
    g = _graph(lambda b, x: b.matmul(x, x))
    got = int32_out_of_range(g, {"x": np.full((4, 4), 2048, np.int32)})  # sums 4 * 2**22
    assert got == "tensor.matmul sums reach 16777216 >= 2**24 (fp32 on the Tensor engine)"
    assert int32_out_of_range(g, {"x": np.full((4, 4), 2047, np.int32)}) is None


def test_float_overflow_and_saturating_casts_are_not_flagged():
    f = {"x": np.full((4, 4), 3e38, np.float32)}
    assert int32_out_of_range(_graph(lambda b, x: x * x, dtype=nk.float32), f) is None
    cast = _graph(lambda b, x: b.cast(x * 10.0, nk.int32) - 1, dtype=nk.float32)
    assert int32_out_of_range(cast, f) is None  # a float -> int cast saturates in NumPy's model too
    big = {"x": np.full((4, 4), 2**30, np.int32)}
    assert int32_out_of_range(_graph(lambda b, x: b.bitwise_xor(x, x + 7) > x), big) is None


def test_the_fuzz_case_wraps_like_numpy():
    # the long integer_and_bool run's failure: an int32 square of 128x128 matmul results (the
    # kernel saturated to 2**31 - 1 where NumPy wraps; now both wrap)
    b = nk.Builder("g")
    x = b.add_input("x", (1, 128, 128), nk.int32)
    sq = x * x
    m = b.matmul(sq, sq)
    b.set_outputs({"y0": m * m, "y1": m})
    x2 = np.random.default_rng(0).integers(-9, 10, (1, 128, 128)).astype(np.int32)
    assert int32_out_of_range(b.graph, {"x": x2}) is None
    want = nk.run(b.graph, {"x": x2})
    got = nk.compile(b.graph).run({"x": x2})
    for name in ("y0", "y1"):
        np.testing.assert_array_equal(got[name], want[name])
