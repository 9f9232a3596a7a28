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
from nkigen_lite.testing.strategies import OP_NAMES, SMOOTH_OPS, graph_inputs, tensor_graphs

from .helpers import close, three_way

# tensor.custom_kernel carries a hand-written body, which no strategy draws: its three-way
# checks are in tests/lower/test_custom_kernel.py
OPS = [c.name.split(".", 1)[1] for c in T.ALL_TENSOR_OPS if c is not T.CustomKernelOp]
DTYPES = (nk.float32, nk.bfloat16, nk.int32)


def test_every_tensor_op_is_drawn():
    assert set(OPS) <= set(OP_NAMES)


@pytest.mark.parametrize("op", OPS)
@given(data=st.data())
def test_single_op_agrees_three_ways(op, data):
    g = data.draw(tensor_graphs(max_ops=1, ops=[op], dtypes=DTYPES, max_rank=3, max_dim=160))
    x = data.draw(graph_inputs(g))
    three_way(g, x, nk.compile(g))


# Multi-op graphs: smooth ops only (a comparison or floor of two nearly equal values would turn a
# last-bit difference into a different answer) and no matmul (long dot products feeding exp
# amplify rounding). The simulator and the interpreter differ in the last bits of activation
# functions (float64 vs float32 evaluation) and of products, so chains of up to 5 ops get f32
# rtol 1e-4 (~1000 ulp; per-op tests above use 1e-5); bf16 keeps 1e-2, integers stay exact.
CHAIN_OPS = sorted(SMOOTH_OPS - {"matmul"})


@given(data=st.data())
def test_random_graphs_emit_the_same_program_the_interpreter_runs(data):
    """The emitted module on the simulator ≡ Kernel.run on random op chains (the emitter's own
    contract; agreement with nk.run is the lowering's, checked per op above)."""
    g = data.draw(tensor_graphs(max_ops=5, dtypes=DTYPES, ops=CHAIN_OPS, max_rank=3, max_dim=140))
    x = data.draw(graph_inputs(g))
    k = nk.compile(g)
    simulated, interpreted = nk.simulate(k, x), k.run(x)
    for name, v in g.outputs.items():
        dt = v.type.dtype
        rtol = 1e-4 if dt is nk.float32 else None
        close(simulated[name], interpreted[name], dt, f"{name}: simulator vs NKI interpreter", rtol=rtol)
