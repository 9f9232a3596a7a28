"""``nk.topk(x, k, largest=False)``: the k smallest, ascending, ties to the lower index — on NumPy
arrays, Builder Values and traced arrays, for floats (``-x``) and integers (``~x``, no overflow
at the type's minimum), compared with NumPy's stable argsort."""

import numpy as np
import pytest

import nkigen_lite as nk

R = np.random.default_rng(11)


def _smallest(a, k):
    idx = np.argsort(a, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(a, idx, axis=-1), idx


@pytest.mark.parametrize(
    "a",
    [
        R.standard_normal((4, 9)).astype(np.float32),
        R.integers(-3, 3, (4, 9)).astype(np.int32),  # many ties
        np.array([[np.iinfo(np.int32).min, 5, np.iinfo(np.int32).max, -1]], np.int32),
        R.integers(0, 4, (3, 7)).astype(np.uint32),
    ],
    ids=["f32", "i32 ties", "i32 extremes", "u32"],
)
def test_smallest_on_numpy_arrays_builder_values_and_traced_arrays(a):
    want_v, want_i = _smallest(a, 3)
    v, i = nk.topk(a, 3, largest=False)
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(i, want_i)
    b = nk.Builder("smallest")
    x = b.add_input("x", a.shape, nk.get_dtype(a.dtype))
    bv, bi = nk.topk(x, 3, largest=False)
    b.set_outputs({"v": bv, "i": bi})
    out = nk.run(b.graph, {"x": a})
    np.testing.assert_array_equal(out["v"], want_v)
    np.testing.assert_array_equal(out["i"], want_i)
    kv, ki = nk.compile(lambda x: nk.topk(x, 3, largest=False), a)(a)
    np.testing.assert_array_equal(kv, want_v)
    np.testing.assert_array_equal(ki, want_i)


def test_smallest_is_refused_for_bool_and_largest_must_be_a_bool():
    with pytest.raises(nk.BuildError, match="largest=False is not defined for bool"):
        nk.topk(np.ones((2, 3), bool), 1, largest=False)
    with pytest.raises(nk.BuildError, match="largest must be True or False"):
        nk.topk(np.ones((2, 3), np.float32), 1, largest="no")
