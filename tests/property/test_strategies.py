"""The hypothesis strategies keep their contract: valid graphs with 1-3 inputs and 1-2
outputs, only the requested ops / dtypes (plus the documented helpers), smooth mode, inputs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T
from nkigen_lite.testing.strategies import OP_NAMES, SMOOTH_OPS, graph_inputs, tensor_graphs
from nkigen_lite.testing.strategies_indexed import INDEXED_NAMES

HELPERS = {
    "tensor.abs",
    "tensor.add",
    "tensor.maximum",
    "tensor.constant",
    "tensor.full",
    "tensor.greater",
    "tensor.reshape",
    "return",
}
# the indexed ops' instances also build their rows and runtime starts: a gather for scattered
# rows, x[...] windows times 2, an element of an int32 value clipped into range
INDEXED_HELPERS = {"tensor.gather_rows", "tensor.mul", "tensor.slice", "tensor.minimum"}


def test_op_names_cover_every_tensor_op():
    # tensor.custom_kernel carries a hand-written NKI body, which no strategy draws
    # (tests/lower/test_custom_kernel.py checks it)
    drawn = {c.name for c in T.ALL_TENSOR_OPS if c is not T.CustomKernelOp}
    assert {f"tensor.{n}" for n in OP_NAMES} == drawn
    assert SMOOTH_OPS < set(OP_NAMES)
    assert not {"floor", "sign", "less", "where", "mod", "logical_and", "bitwise_or"} & SMOOTH_OPS


@settings(max_examples=settings.default.max_examples * 4)
@given(st.data())
def test_graph_contract(data):
    dtypes = data.draw(st.lists(st.sampled_from(nk.ALL_DTYPES), min_size=1, max_size=3, unique=True))
    max_rank, max_dim = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 5))
    g = data.draw(tensor_graphs(max_ops=5, dtypes=dtypes, max_rank=max_rank, max_dim=max_dim))
    g.verify()
    assert 1 <= len(g.inputs) <= 3 and g.input_names == [f"x{i}" for i in range(len(g.inputs))]
    assert list(g.outputs) in (["y0"], ["y0", "y1"])
    for v in g.inputs:
        assert v.dtype in dtypes and v.ndim <= max_rank and all(1 <= d <= max_dim for d in v.shape)
    inputs = data.draw(graph_inputs(g))
    for name, v in zip(g.input_names, g.inputs):
        a = inputs[name]
        assert a.shape == v.shape and a.dtype == v.dtype.np_dtype
        if v.dtype.is_float:
            assert np.all(np.abs(a.astype(np.float64)) <= 3)


@given(st.data())
def test_ops_restriction(data):
    ops = data.draw(st.sets(st.sampled_from(OP_NAMES), min_size=1, max_size=4))
    g = data.draw(tensor_graphs(max_ops=4, ops=ops, dtypes=(nk.float32, nk.int32)))
    names = {op.name for op in g.ops}
    helpers = HELPERS | (INDEXED_HELPERS if ops & set(INDEXED_NAMES) else set())
    assert names <= {f"tensor.{n}" for n in ops} | helpers


@given(tensor_graphs(max_ops=3, ops={"exp", "tanh", "transpose"}))
def test_ops_without_helpers_add_nothing_else(g):
    assert {op.name for op in g.ops} <= {"tensor.exp", "tensor.tanh", "tensor.transpose", "return"}


@settings(max_examples=settings.default.max_examples * 4)
@given(tensor_graphs(max_ops=6, dtypes=(nk.float32, nk.bfloat16, nk.int16), smooth=True))
def test_smooth_graphs_have_no_discontinuous_ops(g):
    for op in g.ops:
        short = op.name.split(".", 1)[-1]
        assert short in SMOOTH_OPS or op.name in HELPERS - {"tensor.greater"}, op.name
        if isinstance(op, T.ReduceOp):
            assert op.attrs["kind"] not in ("any", "all")
        if isinstance(op, T.CastOp):
            assert op.attrs["dtype"].is_float
        assert not any(r.dtype.is_bool for r in op.results)


@given(st.data())
def test_positive_inputs(data):
    g = data.draw(tensor_graphs(max_ops=2, dtypes=(nk.float16, nk.uint8, nk.float8_e5m2, nk.int8)))
    inputs = data.draw(graph_inputs(g, positive=True))
    for a in inputs.values():
        assert np.all(a.astype(np.float64) > 0)


@settings(max_examples=settings.default.max_examples * 4)
@given(st.data())
def test_guarded_graphs_produce_no_nan_from_domain_errors(data):
    g = data.draw(
        tensor_graphs(
            max_ops=4,
            ops={"log", "sqrt", "rsqrt", "reciprocal", "div", "pow", "floor_divide", "mod", "add", "sub"},
            dtypes=(nk.float32,),
        )
    )
    inputs = data.draw(graph_inputs(g))
    for out in nk.run(g, inputs, mode="float64").values():
        assert np.all(np.isfinite(out))


def test_bad_arguments_are_value_errors():
    with pytest.raises(ValueError, match="unknown op names \\['expm1'\\]"):
        tensor_graphs(ops={"expm1"})
    with pytest.raises(ValueError):
        tensor_graphs(max_ops=0)
    with pytest.raises(ValueError):
        tensor_graphs(ops={"floor"}, smooth=True)


@given(st.data())
def test_broadcast_to_takes_a_value_above_max_rank(data):
    # the long integer fuzz drew broadcast_to of a rank-5 value (one_hot of a rank-4 one) with a
    # size-1 dim under max_rank=4, and the leading-dims draw had an empty range
    from nkigen_lite.testing.strategies import _Gen

    gen = _Gen(data.draw, (nk.float32,), ("broadcast_to",), max_rank=2, max_dim=3, smooth=False)
    gen.add(gen.b.add_input("x", (1, 2, 1), nk.float32))
    out = gen.broadcast_to()
    assert out.ndim == 3 and out.shape[1] == 2 and out.dtype is nk.float32
