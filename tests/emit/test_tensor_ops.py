"""Every tensor op alone, on random shapes and dtypes (f32, bf16, i32; dims up to 160 so tiles
are often partial): the emitted module on the simulator ≡ Kernel.run ≡ nk.run.

The graphs come from ``tensor_graphs(max_ops=1, ops=[op])`` (an op plus the domain guards and
partners that strategy adds). Every one must compile: a BuildError fails the test.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T
from nkigen_lite.testing.strategies import OP_NAMES, graph_inputs, tensor_graphs

from .helpers import close, three_way

OPS = [c.name.split(".", 1)[1] for c in T.ALL_TENSOR_OPS]
DTYPES = (nk.float32, nk.bfloat16, nk.int32)


def test_every_tensor_op_is_drawn():
    assert set(OPS) <= set(OP_NAMES)


@pytest.mark.parametrize("op", OPS)
@given(data=st.data())
def test_single_op_agrees_three_ways(op, data):
    g = data.draw(tensor_graphs(max_ops=1, ops=[op], dtypes=DTYPES, max_rank=3, max_dim=160))
    x = data.draw(graph_inputs(g))
    three_way(g, x, nk.compile(g))


@given(data=st.data())
def test_random_graphs_emit_the_same_program_the_interpreter_runs(data):
    """Multi-op graphs of every op and dtype: the emitted module on the simulator ≡ Kernel.run
    (the emitter's own contract; agreement with nk.run is the lowering's, tested above per op)."""
    g = data.draw(tensor_graphs(max_ops=5, dtypes=DTYPES, max_rank=3, max_dim=140))
    x = data.draw(graph_inputs(g))
    k = nk.compile(g)
    simulated, interpreted = nk.simulate(k, x), k.run(x)
    for name, v in g.outputs.items():
        close(simulated[name], interpreted[name], v.type.dtype, f"{name}: simulator vs NKI interpreter")
