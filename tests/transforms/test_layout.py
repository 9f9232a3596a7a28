"""The layout solver: choices for the workloads, conflicts, knobs, reshapes, the analysis."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.passes import PassContext
from nkigen_lite.transforms import (
    LayoutAnalysis,
    LayoutConvertOp,
    canonicalize,
    decompose,
    solve_layout,
)
from nkigen_lite.transforms.layout.solver import merge_roles, split_roles
from nkigen_lite.transforms.pipeline import default_tensor_pipeline
from nkigen_lite.workloads import get_workload

from .helpers import assert_same_semantics, copy_graph
from .layout_check import assert_layout_consistent


def _prepared(name, **opts):
    g = get_workload(name).graph(**opts)
    canonicalize(g)
    decompose(g)
    return g


def _roles(g, a):
    names = nk.ir.Printer(g).names
    return {names[v]: a.roles[v] for v in a.values()}


def test_softmax_rows_on_partitions_no_conversion():
    g = _prepared("softmax")
    a = solve_layout(g, 128)
    assert not a.conversions and not a.boundaries
    assert set(_roles(g, a).values()) == {("P", "F")}
    assert a.partition_tile[g.inputs[0]] == 128  # 256 rows in two tiles
    assert_layout_consistent(g, a)


def test_layernorm_weight_vectors_are_free():
    g = _prepared("layernorm")
    a = solve_layout(g, 128)
    r = _roles(g, a)
    assert r["x"] == ("P", "F") and r["w"] == ("F",) and r["b"] == ("F",)
    assert not a.conversions
    assert_layout_consistent(g, a)


def test_attention_needs_exactly_one_conversion():
    g = _prepared("attention")
    a = solve_layout(g, 128)
    r = _roles(g, a)
    assert r["q"] == ("F", "P") and r["k"] == ("F", "P") and r["v"] == ("P", "F")
    assert r["matmul"] == ("P", "F")  # scores: query rows on the partitions
    (conv,) = a.conversions
    user = conv.result.users
    assert [u.name for u in user] == ["tensor.matmul"] and user[0].operand(0) is conv.result
    assert a.roles[conv.operand(0)] == ("P", "F") and a.roles[conv.result] == ("F", "P")
    assert a.roles[g.outputs["o"]] == ("P", "F")
    assert a.partition_tile[g.inputs[0]] == 64  # q's P dim is d = 64
    assert_layout_consistent(g, a)


def test_matmul_chains():
    b = nk.Builder("chain")
    x = b.add_input("x", (128, 256))
    w1 = b.add_input("w1", (256, 512))
    w2 = b.add_input("w2", (512, 64))
    w3 = b.add_input("w3", (64, 32))
    b.set_outputs({"y": ((x @ w1) @ w2) @ w3})
    g = b.graph
    a = solve_layout(g, 128)
    assert len(a.conversions) == 2  # each intermediate product feeds the next as its A
    for conv in a.conversions:
        assert a.roles[conv.operand(0)] == ("P", "F") and a.roles[conv.result] == ("F", "P")
    assert_layout_consistent(g, a)


def test_genuine_conflict_gets_an_explicit_conversion_and_keeps_semantics():
    b = nk.Builder("conflict")
    x = b.add_input("x", (128, 64))
    w = b.add_input("w", (64, 32))
    s = b.sum(x, axis=1, keepdims=True)
    b.set_outputs({"y": x @ w + s, "z": b.exp(x)})
    g = b.graph
    before = copy_graph(g)
    a = solve_layout(g, 128)
    g.verify()
    (conv,) = a.conversions
    assert isinstance(conv, LayoutConvertOp) and conv.operand(0) is g.inputs[0]
    assert a.roles[g.inputs[0]] == ("P", "F") and a.roles[conv.result] == ("F", "P")
    assert_layout_consistent(g, a)
    rng = np.random.default_rng(0)
    feed = {
        "x": rng.standard_normal((128, 64)).astype(np.float32),
        "w": rng.standard_normal((64, 32)).astype(np.float32),
    }
    assert_same_semantics(before, g, feed, f64_tol=(0.0, 0.0))


def test_batched_attention_heads():
    b = nk.Builder("mha")
    q = b.add_input("q", (4, 128, 64))
    k = b.add_input("k", (4, 128, 64))
    v = b.add_input("v", (4, 128, 64))
    s = q @ b.swapaxes(k, 1, 2) * 0.125
    e = b.exp(s - b.max(s, axis=-1, keepdims=True))
    b.set_outputs({"o": (e / b.sum(e, axis=-1, keepdims=True)) @ v})
    g = b.graph
    canonicalize(g)
    decompose(g)
    a = solve_layout(g, 128)
    r = _roles(g, a)
    assert r["q"] == ("I", "F", "P") and r["v"] == ("I", "P", "F")
    assert len(a.conversions) == 1
    assert_layout_consistent(g, a)


def test_knobs_seed_partition_dim_and_tile_size():
    b = nk.Builder("ew")
    x = b.add_input("x", (64, 256))
    y = b.exp(x) * 2.0
    b.set_outputs({"y": y})
    g = b.graph
    a = solve_layout(copy_graph(g), 128, {"x": {"partition_dim": 1, "tile_size": 32}})
    assert {a.roles[v] for v in a.values() if v.ndim} == {("F", "P")}
    assert {a.partition_tile[v] for v in a.values() if v.ndim} == {32}
    # default without knobs: rows on the partitions, one tile of 64 rows
    d = solve_layout(copy_graph(g), 128)
    assert d.roles_of(d.graph.inputs[0]) == ("P", "F") and d.partition_tile[d.graph.inputs[0]] == 64


def test_tile_knob_follows_the_class_when_it_merges_into_a_bigger_one():
    b = nk.Builder("ew")
    x = b.add_input("x", (256, 64))
    w = b.add_input("w", (256, 64))
    y = b.exp(w) + b.exp(w) * 2.0 + w  # w's classes grow large first
    b.set_outputs({"y": y + x})  # x (small class, with the knob) joins them last
    a = solve_layout(b.graph, 128, {"x": {"tile_size": 16}})
    assert {a.partition_tile[v] for v in a.values() if v.ndim} == {16}


def test_knob_against_a_reduction_inserts_a_conversion():
    g = get_workload("softmax").graph(shape=(128, 64))
    before = copy_graph(g)
    a = solve_layout(g, 128, {"x": {"partition_dim": 1}})
    assert a.roles_of(g.inputs[0]) == ("F", "P")
    assert len(a.conversions) == 1 and a.conversions[0].operand(0) is g.inputs[0]
    assert_layout_consistent(g, a)
    x = np.random.default_rng(1).standard_normal((128, 64)).astype(np.float32)
    assert_same_semantics(before, g, {"x": x}, f64_tol=(0.0, 0.0))


def test_knob_on_an_op_result_that_disagrees_with_the_op():
    b = nk.Builder("mm")
    x = b.add_input("x", (128, 64))
    w = b.add_input("w", (64, 96))
    b.set_outputs({"y": b.exp(x @ w)})
    g = b.graph
    a = solve_layout(g, 128, {"matmul": {"partition_dim": 1}})
    (conv,) = a.conversions
    assert a.roles[conv.operand(0)] == ("P", "F") and a.roles[conv.result] == ("F", "P")
    assert a.roles[g.outputs["y"]] == ("F", "P")
    assert_layout_consistent(g, a)


@pytest.mark.parametrize(
    "knobs, match",
    [
        ({"nope": {}}, "no value of @softmax has this name"),
        ({"x": {"partition": 0}}, "unknown knob .partition."),
        ({"x": {"partition_dim": 2}}, "partition_dim 2 is not a dim"),
        ({"x": {"tile_size": 129}}, r"tile_size 129 is not in \[1, 128\]"),
        ({"x": 3}, "expected a dict"),
    ],
)
def test_bad_knobs_are_clear_errors(knobs, match):
    with pytest.raises(nk.BuildError, match=match):
        solve_layout(get_workload("softmax").graph(), 128, knobs)


def test_reshape_split_and_merge_map_roles():
    assert split_roles("P", [2, 128], 128) == ["P", "P"]
    assert split_roles("P", [4, 8, 16], 128) == ["P", "P", "P"]
    assert split_roles("P", [4, 256], 128) == ["I", "P"]
    assert split_roles("F", [4, 8], 128) == ["F", "F"]
    assert merge_roles(["I", "P"]) == "P" and merge_roles(["I", "F", "F"]) == "F"
    assert merge_roles(["P", "F"]) is None and merge_roles(["F", "I"]) is None
    b = nk.Builder("rs")
    x = b.add_input("x", (256, 64))
    s = b.sum(x, axis=1, keepdims=True)  # x: [P, F]
    split = b.exp(b.reshape(x, (2, 128, 64)))  # P splits into P dims: [P, P, F]
    flat = b.reshape(x, (256 * 64,)) * 2.0  # merges P with F: a boundary
    b.set_outputs({"s": s, "split": split, "flat": flat})
    g = b.graph
    a = solve_layout(g, 128)
    assert_layout_consistent(g, a)
    assert a.roles_of(g.inputs[0]) == ("P", "F")
    assert a.roles_of(g.outputs["split"]) == ("P", "P", "F")
    assert a.partition_tile[g.outputs["split"]] == 128
    (boundary,) = a.boundaries
    assert boundary.result.shape == (256 * 64,)
    merge = nk.Builder("merge")
    y = merge.add_input("y", (4, 32, 16))
    m = merge.reshape(y, (128, 16))  # two dims merge into the P dim
    merge.set_outputs({"m": merge.max(m, axis=1)})
    am = solve_layout(merge.graph, 128)
    assert_layout_consistent(merge.graph, am)
    assert not am.boundaries and am.roles_of(merge.graph.inputs[0]) == ("P", "P", "F")
    assert am.partition_tile[merge.graph.inputs[0]] == 128


def test_layout_pass_is_idempotent_and_deterministic():
    g = _prepared("attention")
    ctx = PassContext()
    nk.get_pass("layout").run(g, ctx)
    first, text = ctx.get(LayoutAnalysis), str(g)
    again = solve_layout(g, 128)
    assert str(g) == text and not again.conversions
    assert _roles(g, again) == _roles(g, first)
    other = _prepared("attention")
    assert str(solve_layout(other, 128)) == str(first)


def test_analysis_prints_a_table_and_rejects_foreign_values():
    g = _prepared("attention", seq=16, d=8)
    a = solve_layout(g, 128)
    text = str(a)
    assert text.startswith("layout @attention (partitions = 128)\n")
    assert "  %q " in text and "[F, P]" in text
    assert "conversion %mul_1_conv = layout_convert %mul_1: [P, F] -> [F, P]" in text
    assert a.p_dims(g.inputs[0]) == (1,)
    with pytest.raises(KeyError, match="not a value of @attention"):
        a.roles_of(nk.parse("graph @h(%x: tensor<2xf32>) {\n  return y = %x\n}\n").inputs[0])


def test_layout_convert_op_round_trips_and_runs():
    g = _prepared("attention", seq=16, d=8)
    solve_layout(g, 128)
    text = str(g)
    assert "tensor.layout_convert" in text
    again = nk.parse(text)
    assert str(again) == text
    w = get_workload("attention")
    feed = w.inputs(again, seed=2)
    for name, ref in w.reference(**feed).items():
        nk.testing.assert_close(nk.run(again, feed)[name], ref, nk.float32)
    with pytest.raises(nk.VerifyError, match="layout_convert"):
        nk.parse(
            "graph @h(%x: tensor<2xf32>) {\n"
            "  %y = tensor.layout_convert %x : tensor<3xf32>\n  return y = %y\n}\n"
        )


@pytest.mark.parametrize(
    "name", ["softmax", "layernorm", "rmsnorm", "attention", "swiglu_mlp", "matmul", "rope"]
)
def test_default_pipeline_on_workloads(name):
    w = get_workload(name)
    g = w.graph()
    res = default_tensor_pipeline().run(copy_graph(g))
    a = res.ctx.get(LayoutAnalysis)
    assert_layout_consistent(res.graph, a)
    expected = {"attention": 1, "swiglu_mlp": 1}.get(name, 0)
    assert len(a.conversions) == expected
    feed = w.inputs(g, seed=0)
    assert_same_semantics(g, res.graph, feed, f64_tol=(1e-9, 1e-9))
