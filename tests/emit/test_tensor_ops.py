"""Every tensor op alone, on random shapes and dtypes (f32, bf16, i32; dims up to 160 so tiles
are often partial): the emitted module on the simulator ≡ Kernel.run ≡ nk.run.

The graphs come from ``tensor_graphs(max_ops=1, ops=[op])`` (an op plus the domain guards and
partners that strategy adds). Compilations the lowering rejects on purpose raise a BuildError
with the stated reason (TensorE has no integer matmul; HBM views have no negative strides); the
test asserts exactly those messages, so any other BuildError fails it.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T
from nkigen_lite.testing.strategies import OP_NAMES, graph_inputs, tensor_graphs

from .helpers import three_way

OPS = [c.name.split(".", 1)[1] for c in T.ALL_TENSOR_OPS]
DTYPES = (nk.float32, nk.bfloat16, nk.int32)
# Deliberate lowering limits, each with the message the lowering gives.
EXPECTED_REFUSALS = (
    "operand dtype int32 is not supported by the Tensor engine",
    "with a negative step (a reversal) is not supported",
)


def test_every_tensor_op_is_drawn():
    assert set(OPS) <= set(OP_NAMES)


@pytest.mark.parametrize("op", OPS)
@settings(max_examples=6)
@given(data=st.data())
def test_single_op_agrees_three_ways(op, data):
    g = data.draw(tensor_graphs(max_ops=1, ops=[op], dtypes=DTYPES, max_rank=3, max_dim=160))
    x = data.draw(graph_inputs(g))
    try:
        k = nk.compile(g)
    except nk.BuildError as e:
        assert any(m in str(e) for m in EXPECTED_REFUSALS), f"{op}: unexpected BuildError: {e}"
        return
    three_way(g, x, k)
