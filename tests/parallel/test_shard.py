"""nk.shard: rank graphs with collectives inserted, run by nk.run_ranks, against float64 NumPy
references written independently (the Qwen3-0.6B layer at TP = 2 and 4, and small graphs)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.parallel.qwen3 import (
    QWEN3_0_6B,
    QWEN3_TP_PLAN,
    build_qwen3_layer,
    qwen3_inputs,
    qwen3_reference,
)

TOL = 1e-6  # float64 mode vs float64 NumPy: the graph holds its constants as f32 values


@pytest.fixture(scope="module")
def qwen():
    g = build_qwen3_layer(seq=8)
    ins = qwen3_inputs(seq=8)
    return g, ins, qwen3_reference(ins)["y"]


def _close(got, want, tol=TOL):
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < tol, f"relative error {err:.3g} >= {tol}"


@pytest.mark.parametrize("tp", [2, 4])
def test_sharded_qwen3_layer_matches_the_unsharded_float64_reference(qwen, tp):
    g, ins, want = qwen
    s = nk.shard(g, world=tp, plan=QWEN3_TP_PLAN)
    outs = nk.run_ranks(s, s.split_inputs(ins), world=tp, mode="float64")
    for o in outs:
        _close(o["y"], want)
        assert o["y"].tobytes() == outs[0]["y"].tobytes()
    # Megatron: one all_reduce after attention (w_o) and one after the MLP (w_down), nothing else
    assert s.collectives(0) == ["tensor.all_reduce tensor<8x1024xf32>"] * 2
    assert s.comm_bytes(0) == 2 * (2 * (tp - 1) * 8 * 1024 * 4 // tp)


@pytest.mark.parametrize("tp", [2, 4])
def test_qwen3_rank_graphs_hold_their_share_of_the_parameters(tp):
    d = QWEN3_0_6B
    h, hd, inter = d["hidden"], d["head_dim"], d["inter"]
    sharded = h * d["heads"] * hd * 2 + h * d["kv_heads"] * hd * 2 + 3 * h * inter
    replicated = 2 * h + 2 * hd
    s = nk.shard(build_qwen3_layer(seq=8, dtype=nk.bfloat16), tp, QWEN3_TP_PLAN)
    for r in range(tp):
        assert s.param_bytes(r) == 2 * (sharded // tp + replicated)
        assert s.graphs[r].input("w_q").type.shape == (1024, 2048 // tp)
        assert s.graphs[r].input("w_o").type.shape == (2048 // tp, 1024)
    text = str(s.graphs[1])
    assert nk.parse(text) is not None and str(nk.parse(text)) == text


def test_qwen3_sharded_faithful_mode_stays_within_fp32_tolerance(qwen):
    g, ins, want = qwen
    s = nk.shard(g, world=2, plan=QWEN3_TP_PLAN)
    outs = nk.run_ranks(s, s.split_inputs(ins), world=2)
    _close(outs[0]["y"], want, tol=1e-5)  # fp32 compute
    assert outs[0]["y"].tobytes() == outs[1]["y"].tobytes()


def _mlp_graph():
    b = nk.Builder("mlp")
    x = b.add_input("x", (6, 8), nk.float32)
    w1 = b.add_input("w1", (8, 12), nk.float32)
    w2 = b.add_input("w2", (12, 8), nk.float32)
    hmid = b.tanh(x @ w1)
    b.set_outputs({"y": b.softmax(hmid @ w2, axis=-1), "z": b.max(hmid, axis=0)})
    return b.graph


@pytest.mark.parametrize(
    "plan",
    [
        {"w1": "column", "w2": "row"},  # Megatron MLP
        {"w1": "row", "w2": "column"},  # partial first, sharded second
        {"w1": 0, "w2": "replicated", "x": 1},  # contraction dim on both sides
        {"x": 0},  # sequence-sharded activation
    ],
)
def test_small_graph_matches_numpy_under_several_plans(plan):
    rng = np.random.default_rng(3)
    ins = {
        "x": rng.standard_normal((6, 8)),
        "w1": rng.standard_normal((8, 12)),
        "w2": rng.standard_normal((12, 8)),
    }
    ins = {k: v.astype(np.float32) for k, v in ins.items()}
    f = {k: v.astype(np.float64) for k, v in ins.items()}
    hmid = np.tanh(f["x"] @ f["w1"])
    t = hmid @ f["w2"]
    e = np.exp(t - t.max(-1, keepdims=True))
    want = {"y": e / e.sum(-1, keepdims=True), "z": hmid.max(0)}
    s = nk.shard(_mlp_graph(), 2, plan)
    for o in nk.run_ranks(s, s.split_inputs(ins), world=2, mode="float64"):
        for k in want:
            np.testing.assert_allclose(o[k], want[k], rtol=1e-12, atol=1e-12, err_msg=k)


def test_plan_errors_name_the_input_and_the_rule():
    g = _mlp_graph()
    with pytest.raises(nk.BuildError, match=r"plan names \['w3'\], which are not inputs"):
        nk.shard(g, 2, {"w3": "column"})
    with pytest.raises(
        nk.BuildError,
        match=r"input 'w1' .*axis 1 of size 12 is not divisible "
        r"by world 5",
    ):
        nk.shard(g, 5, {"w1": "column"})
    with pytest.raises(nk.BuildError, match=r"plan entry 'w1': 'diagonal' is not one of"):
        nk.shard(g, 2, {"w1": "diagonal"})
    with pytest.raises(nk.BuildError, match=r"world must be a positive int"):
        nk.shard(g, 0, {})
