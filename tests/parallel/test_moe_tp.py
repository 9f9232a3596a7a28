"""The Qwen3-30B-A3B MoE block sharded by MOE_TP_PLAN (experts split along their intermediate
dimension, router replicated, one all_reduce) at TP = 2 and 4: rank graphs through nk.run_ranks,
compiled rank kernels through the rank-parallel NKI interpreter and the simulator, against the
single-rank float64 reference (workloads/moe.py, written independently of the graph).

Tolerances: float64 mode vs the unsharded graph in float64 mode 1e-12 relative (only the order
of float64 sums differs); compiled bf16 kernels vs the float64 reference bf16's 1e-2, absolute
part scaled by max|reference| (tests/emit/helpers.py)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ops as N
from nkigen_lite.parallel.moe import MOE_TP_PLAN
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.moe import moe_reference

from ..emit.helpers import close

TOKENS = 4
SMALL = {"hidden": 256, "experts": 16, "inter": 512}  # per-rank slabs at TP=4: 256 x 128


@pytest.fixture(scope="module")
def moe():
    w = get_workload("moe")
    g = w.graph(tokens=TOKENS, **SMALL)
    ins = w.inputs(g, seed=3)
    return g, ins, moe_reference(**ins)["y"]


def _gather_bytes(k) -> dict:
    out: dict = {}

    def walk(block, mult):
        for op in block:
            if isinstance(op, N.ForiLoopOp):
                a = op.attrs
                walk(op.regions[0].block, mult * -(-(a["upper"] - a["lower"]) // a["step"]))
            elif isinstance(op, N.DmaGatherOp):
                root = op.access("src").tensor
                if isinstance(root.defining_op, N.HbmViewOp):
                    root = root.defining_op.operand(0)
                out[root.name_hint] = out.get(root.name_hint, 0) + mult * op.moved.size * 2

    walk(k.nki.body, 1)
    return out


@pytest.mark.parametrize("tp", [2, 4])
def test_sharded_moe_rank_graphs_match_the_unsharded_block(moe, tp):
    g, ins, want = moe
    s = nk.shard(g, world=tp, plan=MOE_TP_PLAN)
    # one collective: the partial down projections summed once, after the weighted expert sum
    assert s.collectives(0) == [f"tensor.all_reduce tensor<{TOKENS}x256xf32>"]
    assert s.comm_bytes(0) == 2 * (tp - 1) * TOKENS * 256 * 4 // tp
    expert = 256 * 512 * 2 * 3
    assert s.param_bytes(0) == 16 * expert // tp + 256 * 16 * 2  # experts split, router whole
    single = nk.run(g, ins, mode="float64")["y"]
    outs = nk.run_ranks(s, s.split_inputs(ins), world=tp, mode="float64")
    assert all(o["y"].tobytes() == outs[0]["y"].tobytes() for o in outs)
    np.testing.assert_allclose(outs[0]["y"], single, rtol=1e-12, atol=1e-12 * np.abs(single).max())
    close(outs[0]["y"], want, nk.bfloat16, f"TP={tp} float64 mode vs float64 reference")


@pytest.mark.parametrize("tp", [2, 4])
def test_sharded_moe_kernels_match_the_float64_reference(moe, tp):
    g, ins, want = moe
    s = nk.shard(g, world=tp, plan=MOE_TP_PLAN)
    kernels = nk.compile_ranks(s)
    for k in kernels:
        nk.nki.verify(k.nki)
        assert [op.attrs["world"] for op in k.nki.walk() if isinstance(op, N.AllReduceOp)] == [tp]
        # 32 selections of 16 experts: each rank reads its 1/TP block of every expert once
        # (canonical/gathered_matmul.py's dense form), never per selection
        block = 16 * 256 * 512 * 2 // tp
        reads = bytes_by_tensor(k.nki)
        assert {t: reads[t]["read"] for t in ("w_gate", "w_up", "w_down")} == dict.fromkeys(
            ("w_gate", "w_up", "w_down"), block
        )
    rank_ins = s.split_inputs(ins)
    for run in (nk.run_kernel_ranks, nk.simulate_ranks):
        outs = run(kernels, rank_ins)
        assert all(o["y"].tobytes() == outs[0]["y"].tobytes() for o in outs), run.__name__
        close(outs[0]["y"], want, nk.bfloat16, f"TP={tp} {run.__name__} vs float64 reference")


def test_full_size_rank_kernels_gather_a_quarter_of_each_selected_expert():
    """Qwen3-30B-A3B shapes, 8 tokens, TP = 4: rank 0's kernel compiled, never run."""
    g = get_workload("moe").graph(tokens=8)
    k = nk.compile(nk.shard(g, world=4, plan=MOE_TP_PLAN).graphs[0])
    slab = 2048 * 192 * 2  # 768 / 4 intermediate columns per rank
    assert _gather_bytes(k) == dict.fromkeys(("w_gate", "w_up", "w_down"), 64 * slab)
    s = k.stats()
    assert s.collective_count == 1 and s.collective_bytes == 2 * 3 * 8 * 2048 * 4 // 4
    # each selected slab read once, straight into SBUF (tensor.gathered_matmul)
    assert s.hbm_bytes <= 1.02 * s.min_hbm_bytes, s.summary()


def _graph(table_shape, ids_shape):
    b = nk.Builder("g")
    t = b.add_input("t", table_shape, nk.float32)
    x = b.add_input("x", (ids_shape[0], table_shape[1]), nk.float32)
    w = b.add_input("w", (table_shape[2], 5), nk.float32)
    logits = b.sum(x, axis=-1, keepdims=True) * b.iota((ids_shape[0], table_shape[0]), axis=1)
    _, ids = b.topk(logits, ids_shape[1])  # a multi-result op on each rank
    rows = b.gather_rows(t, ids)  # (tokens, k, hidden, inter)
    h = b.reshape(x, (ids_shape[0], 1, 1, table_shape[1])) @ rows  # (tokens, k, 1, inter)
    y = (b.reshape(h, (ids_shape[0], ids_shape[1], table_shape[2])) @ w).astype(nk.float32)
    b.set_outputs({"y": b.sum(y * 0.5, axis=1)})
    return b.graph


@pytest.mark.parametrize(
    "plan, collectives",
    [
        ({"t": "column", "w": "row"}, ["tensor.all_reduce tensor<3x5xf32>"]),  # partial to the end
        ({"t": 0}, ["tensor.all_gather tensor<3x4x4xf32>"]),  # experts sharded: gathered whole
        ({"t": 1}, ["tensor.all_reduce tensor<3x2x4xf32>"]),  # contraction split: partial
    ],
)
def test_gather_rows_topk_and_linear_partials_shard_correctly(plan, collectives):
    g = _graph((6, 4, 4), (3, 2))
    rng = np.random.default_rng(0)
    ins = {n: rng.standard_normal(v.type.shape).astype(np.float32) for n, v in zip(g.input_names, g.inputs)}
    f = {n: a.astype(np.float64) for n, a in ins.items()}
    s_row = f["x"].sum(-1)
    order = np.argsort(-(s_row[:, None] * np.arange(6)), axis=-1, kind="stable")[:, :2]
    rows = f["t"][order]  # (3, 2, 4, 4)
    h = np.einsum("th,tkhi->tki", f["x"], rows)
    want = (h @ f["w"] * 0.5).sum(1)
    s = nk.shard(g, 2, plan)
    assert s.collectives(0) == collectives
    for o in nk.run_ranks(s, s.split_inputs(ins), world=2, mode="float64"):
        np.testing.assert_allclose(o["y"], want, rtol=1e-12, atol=1e-12)
