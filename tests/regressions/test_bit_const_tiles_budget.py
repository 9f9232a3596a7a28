"""Found by the matmul fuzzer (tests/property/test_matmul_fuzz.py family): an int32 matmul of
a floor-divided operand (WideIntMatmul's byte digits: seven 32-bit bitwise constants) over a
(257, 16) operand on one partition row failed verification (SBUF peak 213,824 B/partition >
212,984): the group's GpSimd bitwise constant tiles (fold.bit_consts, one full tile per
constant, live for the whole group) were not charged in its row budget (liveness.py).
Results compared exactly with NumPy's int32 matmul."""

import numpy as np

import nkigen_lite as nk


def test_int_matmul_of_floor_divided_operand_fits_sbuf():
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (1, 257)).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, (257, 16), dtype=np.int64).astype(np.int32)

    def fn(a, b):
        return a.astype(np.int8) @ (b // 65536)

    k = nk.compile(fn, a, b)
    ref = fn(a, b)
    assert ref.dtype == np.int32
    np.testing.assert_array_equal(k(a, b), ref)
    np.testing.assert_array_equal(nk.simulate(k, {"a": a, "b": b})["y"], ref)
