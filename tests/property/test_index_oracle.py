"""The tie-aware oracle of index outputs (nkigen_lite/testing/index_oracle.py): it accepts the
other side of a tie within tolerance and rejects a wrong, repeated, out-of-range or misordered
index; the end-to-end check uses it (the topk-over-cos tie the long fuzz stopped on)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing.index_oracle import (
    IndexSource,
    check_index_output,
    check_sorted_values,
    flipped_order,
    index_source,
    tie_flipped_env,
    topk_values_axis,
)

from .test_end_to_end import run_end_to_end

TOL = dict(rtol=4e-5, atol=4e-5)  # the end-to-end tolerance of an f32 graph (4 x 1e-5)
COS = np.cos(np.array([-4.0, 4.0, 3.0, 3.0]))  # float64: cos(-4) == cos(4) exactly


def _topk(k, axis=0):
    return IndexSource("tensor.topk", None, axis, k, True)


def _check(got, x, src, dtype=nk.float32, **tol):
    refs = [np.asarray(a) for a in x] if isinstance(x, list) else np.asarray(x)
    check_index_output(np.array(got, np.int32), refs, src, dtype=dtype, what="t", **(tol or TOL))


def test_either_side_of_a_float_tie_passes():
    _check([0], COS, _topk(1))
    _check([1], COS, _topk(1))
    _check([1, 0], COS, _topk(2))
    _check([0, 1], COS, _topk(2))


def test_a_value_within_tolerance_of_the_rank_ties():
    x = np.array([1.0, 1.0 + 1e-6, 0.5])
    _check([0, 1], x, _topk(2))
    with pytest.raises(AssertionError, match="rank 0: got index 0"):
        _check([0, 1], x, _topk(2), rtol=1e-9, atol=1e-9)  # the rule is the given tolerance


def test_a_wrong_index_is_rejected():
    with pytest.raises(AssertionError, match=r"tensor.topk index .*row 0 rank 0: got index 2"):
        _check([2], COS, _topk(1))
    with pytest.raises(AssertionError, match="rank 1: got index 2"):
        _check([0, 2], COS, _topk(2))


def test_a_repeated_index_is_rejected():
    with pytest.raises(AssertionError, match="rank 1: got index 0"):
        _check([0, 0], COS, _topk(2))


def test_order_matters_and_out_of_range_is_rejected():
    x = np.array([3.0, 1.0, 2.0])
    _check([0, 2], x, _topk(2))
    with pytest.raises(AssertionError, match="rank 0: got index 2"):
        _check([2, 0], x, _topk(2))
    with pytest.raises(AssertionError, match="got index 3"):
        _check([0, 3], x, _topk(2))
    with pytest.raises(AssertionError, match="got index -1"):
        _check([-1, 2], x, _topk(2))


def test_nan_ranks_first():
    x = np.array([1.0, np.nan, 2.0])
    _check([1, 2], x, _topk(2))
    with pytest.raises(AssertionError, match="rank 0: got index 2"):
        _check([2, 1], x, _topk(2))


def test_integer_operands_break_ties_exactly():
    x = np.array([5, 5, 1], np.int32)
    _check([0, 1], x, _topk(2), dtype=nk.int32)
    with pytest.raises(AssertionError, match="rank 0: got index 1"):
        _check([1, 0], x, _topk(2), dtype=nk.int32)


def test_rows_along_any_axis():
    x = np.stack([COS, -COS])  # (2, 4): row 1's largest are the two 3.0s
    _check([[1], [3]], x, _topk(1, axis=1))
    with pytest.raises(AssertionError, match="row 1 rank 0: got index 0"):
        _check([[1], [0]], x, _topk(1, axis=1))
    both = np.stack([COS, COS])  # along axis 0 every column is an exact float64 tie
    _check([[0, 1, 1, 0]], both, _topk(1, axis=0))
    _check([[1, 0]] * 4, x.T, _topk(2, axis=1))
    with pytest.raises(AssertionError, match=r"index output of shape \(2, 2\) .* operand of shape \(4, 2\)"):
        _check([[1, 0]] * 2, x.T, _topk(2, axis=1))


def test_argmax_and_argmin_without_keepdims():
    x = np.stack([COS, -COS])
    amax = IndexSource("tensor.argmax", None, 1, 1, False)
    amin = IndexSource("tensor.argmin", None, 1, 1, False)
    _check([1, 2], x, amax)
    _check([2, 0], x, amin)
    _check([3, 1], x, amin)
    with pytest.raises(AssertionError, match="tensor.argmin index .*row 1 rank 0: got index 2"):
        _check([3, 2], x, amin)


def test_any_of_several_references_may_pass_an_index():
    other = np.array([0.0, 1.0, 0.0, 0.0])
    _check([1], [COS, other], _topk(1))
    with pytest.raises(AssertionError):
        _check([2], [COS, other], _topk(1))


def test_topk_values_must_be_sorted_descending():
    check_sorted_values(np.array([[np.nan, 2.0, 2.0, -1.0]]), 1)
    with pytest.raises(AssertionError, match="not sorted descending"):
        check_sorted_values(np.array([1.0, 2.0]), 0)
    with pytest.raises(AssertionError, match="not sorted descending"):
        check_sorted_values(np.array([1.0, np.nan]), 0)


def test_sources_of_index_outputs():
    b = nk.Builder("g")
    x = b.add_input("x", (3, 4), nk.float32)
    v, i = b.topk(x, 2, 1)
    a = b.argmin(x, axis=-1)
    assert index_source(i) == IndexSource("tensor.topk", x, 1, 2, True)
    assert index_source(a) == IndexSource("tensor.argmin", x, 1, 1, False)
    assert index_source(v) is None and index_source(x) is None
    assert topk_values_axis(v) == 1 and topk_values_axis(i) is None


def _cos_topk_graph(k):
    b = nk.Builder("cos_topk")
    x = b.add_input("x0", (6,), nk.int32)
    v, i = b.topk(b.cos(x), k, 0)
    b.set_outputs({"y0": i, "y1": v})
    return b.graph


@pytest.mark.parametrize("k", [1, 2])
def test_end_to_end_accepts_the_other_side_of_a_cos_tie(k):
    # the long fuzz's false failure: float64 cos(-4) == cos(4), the kernel's f32 values differ
    # in the last bit and it may pick index 1; both are right
    run_end_to_end(_cos_topk_graph(k), {"x0": np.array([-4, 4, 3, 3, 3, 3], np.int32)})


def test_end_to_end_still_rejects_a_wrong_index(monkeypatch):
    g = _cos_topk_graph(1)
    feed = {"x0": np.array([-4, 4, 3, 3, 3, 3], np.int32)}
    real = nk.Kernel.run

    def wrong(self, inputs):
        out = real(self, inputs)
        out["y0"] = np.array([2], np.int32)  # cos(3) is the smallest, not a tie of the largest
        return out

    monkeypatch.setattr(nk.Kernel, "run", wrong)
    with pytest.raises(AssertionError, match="Kernel.run y0.*tensor.topk index"):
        run_end_to_end(g, feed)


def test_flipped_order_reverses_runs_of_near_ties_only():
    x = np.array([[1.0, 1.0, 0.5, 0.5 + 1e-7, np.nan, np.nan, 3.0, 2.0]])
    got = flipped_order(x, 1e-5, 1e-5)
    assert got.tolist() == [[4, 5, 6, 7, 1, 0, 2, 3]]
    assert flipped_order(x, 0.0, -1.0).tolist() == [[4, 5, 6, 7, 0, 1, 3, 2]]  # nothing near


def test_the_tie_flipped_reference_breaks_float_ties_the_other_way_only():
    b = nk.Builder("g")
    x = b.add_input("x0", (4,), nk.int32)
    f = b.add_input("x1", (4,), nk.float32)
    _, i_int = b.topk(b.abs(x), 1, 0)
    _, i_cos = b.topk(b.cos(x), 2, 0)
    a_min = b.argmin(f)
    b.set_outputs({"i_int": i_int, "i_cos": i_cos, "a_min": a_min})
    feed = {"x0": np.array([-4, 4, 3, 3], np.int32), "x1": np.array([0.5, -1, -1, 2], np.float32)}
    env = tie_flipped_env(b.graph, feed, *TOL.values())
    got = {n: env[v].tolist() for n, v in b.graph.outputs.items()}
    assert got == {"i_int": [0], "i_cos": [1, 0], "a_min": 2}
    ref = nk.run(b.graph, feed, mode="float64")
    assert {n: a.tolist() for n, a in ref.items()} == {"i_int": [0], "i_cos": [0, 1], "a_min": 1}


def _cos_topk_plus_one_graph():
    b = nk.Builder("cos_topk_plus_one")
    x = b.add_input("x0", (6,), nk.int32)
    _, i = b.topk(b.cos(x), 1, 0)
    b.set_outputs({"y0": i + 1})
    return b.graph


def test_end_to_end_accepts_the_other_side_of_a_tie_downstream_of_the_index():
    run_end_to_end(_cos_topk_plus_one_graph(), {"x0": np.array([-4, 4, 3, 3, 3, 3], np.int32)})


def test_end_to_end_still_rejects_a_wrong_value_downstream_of_the_index(monkeypatch):
    real = nk.Kernel.run

    def wrong(self, inputs):
        out = real(self, inputs)
        out["y0"] = np.array([3], np.int32)  # index 2 + 1: not a tie of the largest cos
        return out

    monkeypatch.setattr(nk.Kernel, "run", wrong)
    with pytest.raises(AssertionError, match="Kernel.run y0"):
        run_end_to_end(_cos_topk_plus_one_graph(), {"x0": np.array([-4, 4, 3, 3, 3, 3], np.int32)})
