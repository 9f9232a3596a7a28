"""nk.compile works on a structural copy: the input and its builder are untouched, the result is
the same as with the print/parse round trip (``verify=True``), and compiling is deterministic."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.compiler import STAGES
from nkigen_lite.workloads import get_workload

NAMES = [
    "softmax",
    "rmsnorm",
    "layernorm",
    "rope",
    "attention",
    "swiglu_mlp",
    "matmul",
    "gelu_tanh",
    "clamped_swiglu",
]


@pytest.mark.parametrize("name", NAMES)
def test_every_stage_and_the_source_are_byte_identical_across_compiles(name):
    g = get_workload(name).graph()
    a, b = nk.compile(g), nk.compile(g, verify=True)
    for stage in STAGES:
        assert a.ir(stage) == b.ir(stage), stage
    assert a.nki_source() == b.nki_source() == nk.compile(g).nki_source()


def test_compile_leaves_the_graph_and_its_builder_alone():
    b = nk.Builder("t")
    x = b.add_input("x", (128, 64), nk.float32)
    c = b.constant(np.arange(64, dtype=np.float32))
    b.set_outputs({"y": b.exp(x - c) * 2.0})
    before, n_ops = str(b.graph), len(b.graph.body)
    k = nk.compile(b.graph)
    assert str(b.graph) == before and len(b.graph.body) == n_ops
    assert k.ir("input") == before
    a = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    ref = np.exp(a.astype(np.float64) - np.arange(64)) * 2.0
    np.testing.assert_allclose(k.run({"x": a})["y"], ref, rtol=1e-5)


def test_an_unknown_stage_is_an_error_naming_the_stages():
    k = nk.compile(get_workload("softmax").graph())
    with pytest.raises(nk.BuildError, match="stages: input"):
        k.ir("lowering")
