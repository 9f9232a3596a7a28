"""Found by the matmul fuzzer (test_matmul_special_paths_match_numpy, seed 1697): an int32
matrix-vector product with K = 4096 of ``b % -7`` (WideIntMatmul's digits: a masked tree of
16+ wrapping adds) did not compile: "rewrite patterns did not converge after 1080 rewrites"
(LowBitsArith 1071). The pattern asked int_range, whose walk stops 16 ops back, whether the
rewritten tree still wraps: its upper adds looked unbounded and it matched its own output
forever. It now carries the ranges through the tree itself. The same failure in small: a
masked sum of 20 wide int32 inputs. Results compared exactly with NumPy's wrapping int32."""

import numpy as np
import pytest

import nkigen_lite as nk


def _masked_sum(*xs):
    s = xs[0]
    for x in xs[1:]:
        s = s + x
    return s & 255


@pytest.mark.parametrize("n", [17, 20, 33])
def test_masked_sum_of_many_wide_inputs_is_exact(n):
    xs = [
        np.random.default_rng(i).integers(-(2**31), 2**31, (4, 8), dtype=np.int64).astype(np.int32)
        for i in range(n)
    ]
    k = nk.compile(_masked_sum, *xs)
    ref = _masked_sum(*xs)
    assert ref.dtype == np.int32
    np.testing.assert_array_equal(k(*xs), ref)
    got = nk.simulate(k, dict(zip(k.input_names, xs, strict=True)))
    np.testing.assert_array_equal(next(iter(got.values())), ref)
