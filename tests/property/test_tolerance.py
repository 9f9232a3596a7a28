"""nkigen_lite.testing.tolerance: the documented tolerances, the pass/fail boundary, special
values, overflow, exact dtypes and the failure message."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import nkigen_lite as nk
from nkigen_lite.testing import assert_close, assert_outputs_close, tolerance_for

DOCUMENTED = {
    "f32": 1e-5,
    "tf32": 2e-3,
    "f16": 2e-3,
    "bf16": 1e-2,
    "f8e3m4": 6.25e-2,
    "f8e4m3": 1.25e-1,
    "f8e4m3fn": 1.25e-1,
    "f8e5m2": 2.5e-1,
}


def test_documented_tolerances():
    for d in nk.ALL_DTYPES:
        want = (DOCUMENTED[d.name],) * 2 if d.is_float else (0.0, 0.0)
        assert tolerance_for(d) == want == tolerance_for(d.name) == tolerance_for(d.numpy_name)
    assert tolerance_for("float64") == tolerance_for(np.float64) == (1e-9, 1e-9)


@pytest.mark.parametrize("d", [d for d in nk.ALL_DTYPES if d.is_float], ids=str)
def test_boundary_of_the_tolerance(d):
    rtol, atol = tolerance_for(d)
    ref = np.array([0.0, 1.0, -3.0, 0.5])
    allowed = atol + rtol * np.abs(ref)
    assert_close(ref + 0.99 * allowed, ref, d)
    assert_close(ref - 0.99 * allowed, ref, d)
    for k in range(4):
        bad = ref.copy()
        bad[k] += 1.01 * allowed[k]
        with pytest.raises(AssertionError, match=rf"1 of 4 elements differ; worst at index \({k},\)"):
            assert_close(bad, ref, d)


def test_special_values_and_overflow():
    assert_close(np.array([np.nan, np.inf, -np.inf]), np.array([np.nan, np.inf, -np.inf]), nk.float32)
    for got, ref in [(np.nan, 1.0), (1.0, np.nan), (np.inf, -np.inf), (np.inf, 1e30)]:
        with pytest.raises(AssertionError):
            assert_close(np.array([got], np.float32), np.array([ref]), nk.float32)
    assert_close(np.array([np.inf, -np.inf], np.float16), np.array([1e5, -7e4]), nk.float16)
    assert_close(np.array([np.inf], np.float32), np.array([1e39]), nk.float32)
    with pytest.raises(AssertionError):
        assert_close(np.array([-np.inf], np.float16), np.array([1e5]), nk.float16)
    with pytest.raises(AssertionError):  # 6e4 is finite in f16: inf is not an acceptable overflow
        assert_close(np.array([np.inf], np.float16), np.array([6e4]), nk.float16)
    nan8 = np.array([np.nan], ml_dtypes.float8_e4m3fn)  # e4m3fn has no inf: overflow is NaN
    assert_close(nan8, np.array([1000.0]), nk.float8_e4m3fn)
    with pytest.raises(AssertionError):
        assert_close(np.array([np.nan], ml_dtypes.float8_e4m3), np.array([1000.0]), nk.float8_e4m3)


def test_exact_dtypes_shapes_and_message():
    assert_close(np.array([3, -4], np.int8), np.array([3.0, -4.0]), nk.int8)
    assert_close(np.array([True, False]), np.array([True, False]), nk.bool_)
    with pytest.raises(
        AssertionError,
        match=r"y\.z: \[i32, rtol=0, atol=0\] 1 of 2 elements differ; "
        r"worst at index \(1,\): got 5\.0, expected 4\.0",
    ):
        assert_close(np.array([3, 5], np.int32), np.array([3, 4]), "int32", what="y.z")
    with pytest.raises(AssertionError, match=r"shape \(2,\) differs from the reference's \(2, 1\)"):
        assert_close(np.zeros(2), np.zeros((2, 1)), nk.float32)
    with pytest.raises(
        AssertionError,
        match=r"\[bf16, .* worst at index \(1, 0\): got 2\.5, "
        r"expected 2\.0 \(abs err 0\.5, allowed 0\.03\)",
    ):
        assert_close(np.array([[1.0], [2.5]], ml_dtypes.bfloat16), np.array([[1.0], [2.0]]), nk.bfloat16)
    with pytest.raises(AssertionError, match=r"worst at index \(\)"):
        assert_close(np.float32(2.0), np.float64(1.0), nk.float32)
    assert_close(np.array(1.0 + 1e-12), np.array(1.0), "float64")
    assert_close(np.array([1.0]), np.array([1.2]), nk.float32, rtol=0.3)


def test_assert_outputs_close_uses_each_outputs_dtype():
    b = nk.Builder("g")
    x = b.add_input("x", (2,), nk.bfloat16)
    b.set_outputs({"y": x * 2.0, "n": b.sum(x > 0)})
    ref = {"y": np.array([2.0, 4.02]), "n": np.array(2)}
    got = nk.run(b.graph, {"x": np.array([1, 2], ml_dtypes.bfloat16)})
    assert_outputs_close(got, ref, b.graph)
    with pytest.raises(AssertionError, match=r"g\.n: \[i32"):
        assert_outputs_close(got, {"y": ref["y"], "n": np.array(1)}, b.graph)
    with pytest.raises(AssertionError, match="outputs"):
        assert_outputs_close({"y": got["y"]}, ref, b.graph)
    oracle = nk.run(b.graph, {"x": np.array([1, 2], ml_dtypes.bfloat16)}, mode="float64")
    with pytest.raises(AssertionError, match=r"\[float64"):
        assert_outputs_close(oracle, ref, b.graph, mode="float64")
    assert_outputs_close(oracle, {"y": np.array([2.0, 4.0]), "n": np.array(2)}, b.graph, mode="float64")


@given(
    st.sampled_from([d for d in nk.ALL_DTYPES if d.is_float]),
    arrays(np.float64, st.integers(1, 20), elements=st.floats(-100, 100)),
)
def test_any_array_is_close_to_itself_and_not_to_a_far_perturbation(d, ref):
    assert_close(ref, ref, d)
    rtol, atol = tolerance_for(d)
    bad = ref + 2 * (atol + rtol * np.abs(ref))
    with pytest.raises(AssertionError, match=f"{ref.size} of {ref.size} elements differ"):
        assert_close(bad, ref, d)
