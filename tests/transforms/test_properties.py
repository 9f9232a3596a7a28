"""Property tests: random graphs keep their semantics through each pass, and the layout
solver's result satisfies every op's constraints.

Float graphs are drawn with ``smooth=True`` (no floor, comparisons, ...): a pass may change a
result by a rounding error (reciprocal * multiply for a division), which a discontinuous op
downstream would turn into a jump. Integer graphs use ops whose decompositions are exact and
are compared exactly.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.testing import assert_close
from nkigen_lite.testing.strategies import graph_inputs, tensor_graphs
from nkigen_lite.testing.tolerance import tolerance_for
from nkigen_lite.transforms import canonicalize, decompose, solve_layout

from .helpers import copy_graph
from .layout_check import assert_layout_consistent

FLOATS = (nk.float32, nk.bfloat16)
INT_OPS = (
    "add",
    "sub",
    "mul",
    "neg",
    "floor_divide",
    "mod",
    "maximum",
    "minimum",
    "abs",
    "square",
    "sign",
    "transpose",
    "reshape",
    "broadcast_to",
    "slice",
    "concat",
    "where",
    "cast",
    "less",
    "equal",
    "matmul",
    "full",
    "iota",
    "constant",
)


def _coarsest_float(graph):
    """The least precise float dtype of any value: a pass may change a result by a rounding
    error in any intermediate dtype (e.g. a bf16 reciprocal feeding an f32 output)."""
    vals = list(graph.inputs) + [r for op in graph.walk() for r in op.results]
    floats = [v.dtype for v in vals if v.dtype.is_float]
    return min(floats, key=lambda d: d.mantissa_bits) if floats else None


def _compare(before, after, feed, f64):
    """float64 mode within ``f64`` = (rtol, atol) — None: the coarsest float dtype's tolerance,
    since constant folding rounds a folded constant to its dtype as the ops it replaces would —
    faithful mode within the tolerance of the coarsest float dtype in the graph (exactly for
    integer outputs)."""
    coarse = _coarsest_float(before)
    for mode in ("float64", "faithful"):
        ref, got = nk.run(before, feed, mode), nk.run(after, feed, mode)
        for name, v in before.outputs.items():
            what = f"{mode} {name}\n{before}\n{after}"
            if not v.dtype.is_float:
                np.testing.assert_array_equal(got[name], ref[name], err_msg=what)
            elif mode == "float64":
                tol = tolerance_for(coarse) if f64 is None else f64
                assert_close(got[name], ref[name], "float64", what=what, rtol=tol[0], atol=tol[1])
            else:
                assert_close(got[name], ref[name], coarse, what=what)


def _check_pass(data, graphs, transform, f64):
    g = data.draw(graphs)
    feed = data.draw(graph_inputs(g))
    after = copy_graph(g)
    with np.errstate(all="ignore"):
        transform(after)
        after.verify()
        _compare(g, after, feed, f64)
    return after


@given(st.data())
def test_canonicalize_keeps_float_semantics(data):
    _check_pass(data, tensor_graphs(max_ops=8, dtypes=FLOATS, smooth=True), canonicalize, None)


@given(st.data())
def test_decompose_keeps_float_semantics(data):
    _check_pass(data, tensor_graphs(max_ops=8, dtypes=FLOATS, smooth=True), decompose, None)


@given(st.data())
def test_passes_keep_integer_semantics_exactly(data):
    graphs = tensor_graphs(max_ops=8, dtypes=(nk.int32, nk.int8, nk.uint16), ops=INT_OPS)
    for transform in (canonicalize, decompose):
        _check_pass(data, graphs, transform, (0.0, 0.0))


@given(st.data())
def test_layout_is_consistent_and_changes_no_value(data):
    g = data.draw(tensor_graphs(max_ops=8, dtypes=(nk.float32, nk.int32)))
    feed = data.draw(graph_inputs(g))
    prepared = copy_graph(g)
    with np.errstate(all="ignore"):
        canonicalize(prepared)
        decompose(prepared)
    before = copy_graph(prepared)
    a = solve_layout(prepared, 128)
    prepared.verify()
    try:
        assert_layout_consistent(prepared, a)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{before}\n{prepared}\n{a}") from None
    with np.errstate(all="ignore"):
        for mode in ("float64", "faithful"):
            ref, got = nk.run(before, feed, mode), nk.run(prepared, feed, mode)
            for name in ref:
                np.testing.assert_array_equal(got[name], ref[name], err_msg=f"{mode} {name}")
