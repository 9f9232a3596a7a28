"""nk.shard when operands disagree on their distribution (the rules expert parallelism needs):
the largest sharded operand keeps its axis and the others are redistributed — all_to_all from
another axis, reduce_scatter of a partial sum, all_gather of an operand broadcasting along the
axis —, a sum over the sharded axis is a partial sum, outputs the plan names stay sharded, a
row-wise topk / one_hot of row-sharded values stays sharded. Every graph run by nk.run_ranks in
float64 mode against NumPy float64 written here (1e-12 relative: only summation order differs)."""

import numpy as np
import pytest

import nkigen_lite as nk


def _run(g, plan, ins, world=2):
    s = nk.shard(g, world, plan)
    return s, s.gather_outputs(nk.run_ranks(s, s.split_inputs(ins), world=world, mode="float64"))


def _ins(g, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(v.type.shape).astype(np.float32) for n, v in zip(g.input_names, g.inputs)}


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_operands_sharded_on_different_axes_meet_through_all_to_all():
    b = nk.Builder("g")
    big = b.add_input("big", (8, 4, 16), nk.float32)
    small = b.add_input("small", (8, 4, 1), nk.float32)
    b.set_outputs({"y": b.sum(big * small, axis=0)})
    ins = _ins(b.graph)
    # big sharded on axis 0, small on axis 1: small is re-sharded to axis 0, the sum over the
    # sharded axis is a partial sum, all-reduced for the replicated output
    s, out = _run(b.graph, {"big": 0, "small": 1}, ins)
    assert s.collectives(0) == ["tensor.all_to_all tensor<8x2x1xf32>", "tensor.all_reduce tensor<4x16xf32>"]
    f = {k: v.astype(np.float64) for k, v in ins.items()}
    _close(out["y"], (f["big"] * f["small"]).sum(0))
    # the same with the output kept sharded on its axis 0: the combine is a reduce_scatter
    s, out = _run(b.graph, {"big": 0, "small": 1, "y": 0}, ins)
    assert s.collectives(0)[-1] == "tensor.reduce_scatter tensor<4x16xf32>"
    assert s.graphs[1].outputs["y"].type.shape == (2, 16)
    _close(out["y"], (f["big"] * f["small"]).sum(0))
    # compiled: the rank kernels exchange through nki.all_to_all / nki.reduce_scatter
    kernels = nk.compile_ranks(s)
    got = s.gather_outputs(nk.run_kernel_ranks(kernels, s.split_inputs(ins)))["y"]
    np.testing.assert_allclose(got, (f["big"] * f["small"]).sum(0), rtol=1e-5, atol=1e-5)  # fp32


def test_a_partial_sum_meeting_a_non_linear_op_is_reduce_scattered_onto_a_sharded_operand():
    b = nk.Builder("g")
    a = b.add_input("a", (6, 4), nk.float32)
    w = b.add_input("w", (4, 8), nk.float32)
    z = b.add_input("z", (6, 8), nk.float32)
    b.set_outputs({"y": b.tanh(a @ w) * z + b.exp(a @ w) * 0 + (a @ w) * z})
    ins = _ins(b.graph, 1)
    s, out = _run(b.graph, {"a": 1, "w": 0, "z": 0}, ins)  # a @ w partial; z sharded by rows
    assert "tensor.reduce_scatter tensor<6x8xf32>" in s.collectives(0)
    f = {k: v.astype(np.float64) for k, v in ins.items()}
    p = f["a"] @ f["w"]
    _close(out["y"], np.tanh(p) * f["z"] + np.exp(p) * 0 + p * f["z"])


def test_batched_matmul_gathers_the_operand_that_broadcasts_along_the_sharded_batch():
    b = nk.Builder("g")
    x = b.add_input("x", (6, 4), nk.float32)
    w = b.add_input("w", (8, 4, 5), nk.float32)
    b.set_outputs({"y": b.sum(b.reshape(x, (1, 6, 4)) @ w, axis=0)})
    ins = _ins(b.graph, 2)
    s, out = _run(b.graph, {"x": 0, "w": 0}, ins)
    # w (the larger) keeps its batch axis: x is gathered (not w), the batch sum is partial
    assert s.collectives(0) == ["tensor.all_gather tensor<1x3x4xf32>", "tensor.all_reduce tensor<6x5xf32>"]
    f = {k: v.astype(np.float64) for k, v in ins.items()}
    _close(out["y"], np.einsum("th,ehi->ti", f["x"], f["w"]))


def test_row_wise_topk_and_one_hot_of_row_sharded_values_stay_sharded():
    b = nk.Builder("g")
    x = b.add_input("x", (8, 10), nk.float32)
    vals, ids = b.topk(x, 3)
    oh = b.one_hot(ids, 10)
    b.set_outputs({"v": vals, "c": b.sum(oh * b.reshape(vals, (8, 3, 1)), axis=1)})
    ins = _ins(b.graph, 3)
    s, out = _run(b.graph, {"x": 0, "v": 0, "c": 0}, ins, world=4)
    assert s.collectives(0) == []  # every row is computed on its own rank
    f = ins["x"].astype(np.float64)
    order = np.argsort(-f, axis=-1, kind="stable")[:, :3]
    top = np.take_along_axis(f, order, -1)
    want_c = np.zeros_like(f)
    for t in range(8):
        want_c[t, order[t]] = top[t]
    _close(out["v"], top)
    _close(out["c"], want_c)


def test_output_plan_errors_name_the_output_and_the_rule():
    b = nk.Builder("g")
    x = b.add_input("x", (6, 4), nk.float32)
    b.set_outputs({"y": b.tanh(x)})
    with pytest.raises(nk.BuildError, match=r"plan names \['q'\], which are not inputs .* nor outputs"):
        nk.shard(b.graph, 2, {"q": 0})
    with pytest.raises(nk.BuildError, match=r"output 'y' .*axis 1 of size 4 is not divisible by world 3"):
        nk.shard(b.graph, 3, {"x": 0, "y": 1})
    with pytest.raises(nk.BuildError, match=r"plan names \['x'\], both an input and an output"):
        b2 = nk.Builder("h")
        x2 = b2.add_input("x", (6, 4), nk.float32)
        b2.set_outputs({"x": b2.tanh(x2)})
        nk.shard(b2.graph, 2, {"x": 0})
    s = nk.shard(b.graph, 2, {"y": 0})
    with pytest.raises(nk.BuildError, match=r"gather_outputs: expected 2 ranks' outputs, got 1"):
        s.gather_outputs([{"y": np.zeros((3, 4))}])
