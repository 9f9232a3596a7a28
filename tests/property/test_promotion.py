"""Random broadcasting / promotion cases agree with NumPy's result shape and dtype (narrowed)."""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T

from ..tensor.numpy_ref import NATIVE, expected_promotion, narrow

NP_OPS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "maximum": np.maximum,
    "floor_divide": np.floor_divide,
    "mod": np.remainder,
    "pow": np.power,
    "bitwise_xor": np.bitwise_xor,
    "less": np.less,
    "logical_and": np.logical_and,
    "equal": np.equal,
}


def _numpy(fn, *args):
    """NumPy's result (dtype, shape), or the exception class it raises."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            r = np.asarray(fn(*args))
        return narrow(r.dtype), r.shape
    except (TypeError, ValueError, OverflowError) as e:
        return type(e)


@settings(max_examples=settings.default.max_examples * 8)
@given(
    st.sampled_from(sorted(NP_OPS)),
    st.sampled_from(NATIVE),
    st.sampled_from(NATIVE),
    mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3),
)
def test_broadcast_and_promotion_of_native_dtypes(name, a, b, shapes):
    sa, sb = shapes.input_shapes
    want = _numpy(NP_OPS[name], np.ones(sa, a.np_dtype), np.ones(sb, b.np_dtype))
    bld = nk.Builder("p")
    x, y = bld.add_input("x", sa, a), bld.add_input("y", sb, b)
    if want is TypeError:
        try:
            bld.binary(name, x, y)
        except nk.BuildError as e:
            assert f"tensor.{name}" in str(e)
            return
        raise AssertionError(f"{name}({a}, {b}) built but NumPy rejects it")
    v = bld.binary(name, x, y)
    assert (v.dtype, v.shape) == want


@settings(max_examples=settings.default.max_examples * 8)
@given(
    st.sampled_from(nk.ALL_DTYPES),
    st.sampled_from(nk.ALL_DTYPES),
    array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4),
    array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4),
)
def test_shapes_broadcast_exactly_when_numpy_says_so(a, b, sa, sb):
    try:
        want = np.broadcast_shapes(sa, sb)
    except ValueError:
        want = None
    bld = nk.Builder("p")
    x, y = bld.add_input("x", sa, a), bld.add_input("y", sb, b)
    if want is None:
        try:
            bld.add(x, y)
        except nk.BuildError as e:
            assert "tensor.add: shapes" in str(e) and "do not broadcast" in str(e)
            return
        raise AssertionError(f"{sa} and {sb} broadcast but NumPy says they do not")
    v = bld.add(x, y)
    assert v.shape == want and v.dtype is expected_promotion(a, b)


@settings(max_examples=settings.default.max_examples * 8)
@given(
    st.sampled_from(nk.ALL_DTYPES),
    st.one_of(st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False, width=32)),
    st.booleans(),
)
def test_weak_python_scalars(d, s, reflected):
    bld = nk.Builder("p")
    x = bld.add_input("x", (2,), d)
    if d in NATIVE:
        want = _numpy(lambda arr: s + arr if reflected else arr + s, np.ones((2,), d.np_dtype))
        if isinstance(want, tuple):
            want = want[0]
            if want.is_int and not np.iinfo(want.np_dtype).min <= s <= np.iinfo(want.np_dtype).max:
                want = OverflowError  # NumPy's int64 result narrows to int32, which cannot hold s
    else:
        want = d
    if want is OverflowError:
        try:
            s + x if reflected else x + s
        except nk.BuildError as e:
            assert "tensor.add:" in str(e) and str(s) in str(e)
            return
        raise AssertionError(f"{d} + {s} built but the value does not fit")
    v = s + x if reflected else x + s
    assert v.dtype is want


@settings(max_examples=settings.default.max_examples * 8)
@given(
    st.sampled_from([n for n, c in T.BINARY_OPS.items() if c.category == "compare"]),
    st.sampled_from([d for d in NATIVE if d.is_int]),
    st.integers(-(2**33), 2**33),
)
def test_integer_comparisons_with_any_python_int_are_exact_or_refused(name, d, s):
    bld = nk.Builder("p")
    x = bld.add_input("x", (3,), d)
    info = np.iinfo(d.np_dtype)
    arr = np.array([info.min, 0, info.max], d.np_dtype)
    if not -(2**31) <= s < 2**32:
        try:
            bld.binary(name, x, s)
        except nk.BuildError as e:
            assert f"tensor.{name}" in str(e)
            return
    bld.set_outputs({"y": bld.binary(name, x, s)})
    got = nk.run(bld.graph, {"x": arr})["y"]
    np.testing.assert_array_equal(got, getattr(np, name)(arr, s))
