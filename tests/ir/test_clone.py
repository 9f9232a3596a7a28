"""ir/clone.py: a structural copy equal to parse(str(graph)), sharing nothing with the original."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.clone import clone_graph
from nkigen_lite.workloads import get_workload


@pytest.mark.parametrize("name", ["softmax", "rope", "attention", "swiglu_mlp", "layernorm"])
def test_clone_prints_like_the_parsed_text(name):
    g = get_workload(name).graph()
    c = clone_graph(g)
    assert str(c) == str(g) == str(nk.parse(str(g)))
    c.verify()
    old = {id(v) for op in g.walk() for v in (*op.operands, *op.results)}
    new = {id(v) for op in c.walk() for v in (*op.operands, *op.results)}
    assert not old & new
    assert not {id(op) for op in g.walk()} & {id(op) for op in c.walk()}


def test_clone_of_an_nki_graph_with_loops_and_locations():
    k = nk.compile(get_workload("softmax").graph(shape=(2048, 512)))  # 16 row tiles of 2 KiB rows: a loop
    assert any(op.regions for op in k.nki.walk())
    c = clone_graph(k.nki)
    assert str(c) == str(k.nki) == str(nk.parse(str(k.nki)))
    a = np.random.default_rng(0).standard_normal((2048, 512)).astype(np.float32)
    np.testing.assert_array_equal(nk.nki.run(c, {"x": a})["y"], k.run({"x": a})["y"])


def test_clone_names_collide_like_the_parser_renames_them():
    b = nk.Builder("t")
    x = b.add_input("x", (4,), nk.float32)
    y = b.exp(x)
    y.name_hint = "x"  # prints as %x_1
    b.set_outputs({"y": b.exp(y)})
    c = clone_graph(b.graph)
    assert [op.result.name_hint for op in c.body.ops[:-1]] == ["x_1", "exp"]
    assert str(c) == str(nk.parse(str(b.graph)))


def test_clone_values_belong_to_no_builder():
    b = nk.Builder("t")
    x = b.add_input("x", (4, 4), nk.float32)
    b.set_outputs({"y": x * 2.0})
    before = str(b.graph)
    c = clone_graph(b.graph)
    with pytest.raises(TypeError, match="not created by a builder"):
        _ = c.outputs["y"] + 1.0
    assert str(b.graph) == before
