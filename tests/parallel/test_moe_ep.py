"""The Qwen3-30B-A3B MoE block sharded by MOE_EP_PLAN (expert parallelism: rank r owns experts
[r·E/N, (r+1)·E/N), tokens sharded, all_gather + all_to_all dispatch, reduce_scatter combine)
and by MOE_EP_REPLICATED_PLAN (experts sharded, tokens replicated, all_reduce combine) at
EP = 2 and 4: rank graphs through nk.run_ranks, compiled rank kernels through the
rank-parallel NKI interpreter and the simulator, against the single-rank float64 reference
(workloads/moe.py ``moe_reference``, one token and one selected expert at a time, written
independently of both graphs).

Tolerances: float64 mode vs the unsharded dense graph in float64 mode 1e-12 relative (only the
order of float64 sums differs); anything vs the float64 reference bf16's 1e-2, absolute part
scaled by max|reference| (tests/emit/helpers.py): the block casts to bf16 inside."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ops as N
from nkigen_lite.parallel.moe_ep import MOE_EP_PLAN, MOE_EP_REPLICATED_PLAN
from nkigen_lite.workloads.moe import build_moe, moe_inputs, moe_reference
from nkigen_lite.workloads.moe_dense import build_moe_dense

from ..emit.helpers import close

TOKENS = 4
SMALL = {"hidden": 256, "experts": 16, "inter": 512}
EXPERT = 256 * 512 * 2 * 3  # one expert's three bf16 slabs


@pytest.fixture(scope="module")
def moe():
    g = build_moe_dense(tokens=TOKENS, **SMALL)
    ins = moe_inputs(g, seed=3)
    return g, ins, moe_reference(**ins)["y"]


def test_dense_combine_block_matches_the_gathered_block_and_the_reference(moe):
    g, ins, want = moe
    assert g.input_names == build_moe(tokens=TOKENS, **SMALL).input_names
    close(nk.run(g, ins, mode="float64")["y"], want, nk.bfloat16, "dense block vs float64 reference")
    gathered = nk.run(build_moe(tokens=TOKENS, **SMALL), ins, mode="float64")["y"]
    close(nk.run(g, ins, mode="float64")["y"], gathered, nk.bfloat16, "dense vs gathered block")


@pytest.mark.parametrize("ep", [2, 4])
def test_rank_graphs_hold_only_their_experts(moe, ep):
    g, ins, _ = moe
    s = nk.shard(g, world=ep, plan=MOE_EP_PLAN)
    local = 16 // ep
    rank_ins = s.split_inputs(ins)
    for r in range(ep):
        for name in ("w_gate", "w_up", "w_down"):
            assert s.graphs[r].input(name).type.shape[0] == local, (r, name)
            own = ins[name][r * local : (r + 1) * local]  # rank r owns experts [r E/N, (r+1) E/N)
            assert rank_ins[r][name].tobytes() == own.tobytes()
        assert s.graphs[r].input("x").type.shape == (TOKENS // ep, 256)
        assert s.param_bytes(r) == 16 * EXPERT // ep + 256 * 16 * 2 + TOKENS // ep * 256 * 2
        # no collective moves a weight: the dispatch moves tokens and combine weights only
        assert s.collectives(r) == [
            f"tensor.all_gather tensor<1x{TOKENS // ep}x256xbf16>",  # tokens, dispatch
            f"tensor.all_to_all tensor<16x{TOKENS // ep}x1xf32>",  # combine weights to experts
            f"tensor.reduce_scatter tensor<{TOKENS}x256xf32>",  # combine back to token owners
        ]
    n = ep
    assert s.comm_bytes(0) == (
        (n - 1) * TOKENS // n * 256 * 2
        + (n - 1) * 16 * TOKENS // n * 4 // n
        + (n - 1) * TOKENS * 256 * 4 // n
    )
    assert s.graphs[0].outputs["y"].type.shape == (TOKENS // ep, 256)  # y stays token-sharded
    text = str(s.graphs[ep - 1])
    assert str(nk.parse(text)) == text
    assert str(nk.shard(g, world=ep, plan=MOE_EP_PLAN).graphs[ep - 1]) == text  # deterministic


@pytest.mark.parametrize("ep", [2, 4])
def test_replicated_token_plan_holds_only_its_experts_and_all_reduces_once(moe, ep):
    g, ins, want = moe
    s = nk.shard(g, world=ep, plan=MOE_EP_REPLICATED_PLAN)
    for r in range(ep):
        assert all(s.graphs[r].input(n).type.shape[0] == 16 // ep for n in ("w_gate", "w_up", "w_down"))
        assert s.param_bytes(r) == 16 * EXPERT // ep + 256 * 16 * 2
        assert s.collectives(r) == [f"tensor.all_reduce tensor<{TOKENS}x256xf32>"]
    outs = nk.run_ranks(s, s.split_inputs(ins), world=ep, mode="float64")
    assert all(o["y"].tobytes() == outs[0]["y"].tobytes() for o in outs)  # replicated output
    single = nk.run(g, ins, mode="float64")["y"]
    np.testing.assert_allclose(outs[0]["y"], single, rtol=1e-12, atol=1e-12 * np.abs(single).max())
    close(outs[0]["y"], want, nk.bfloat16, f"EP={ep} replicated tokens vs float64 reference")


@pytest.mark.parametrize("ep", [2, 4])
def test_expert_parallel_rank_graphs_match_the_unsharded_block(moe, ep):
    g, ins, want = moe
    s = nk.shard(g, world=ep, plan=MOE_EP_PLAN)
    outs = nk.run_ranks(s, s.split_inputs(ins), world=ep, mode="float64")
    assert all(o["y"].shape == (TOKENS // ep, 256) for o in outs)  # each rank its own tokens
    got = s.gather_outputs(outs)["y"]
    single = nk.run(g, ins, mode="float64")["y"]
    np.testing.assert_allclose(got, single, rtol=1e-12, atol=1e-12 * np.abs(single).max())
    close(got, want, nk.bfloat16, f"EP={ep} float64 mode vs float64 reference")
    # a rank given another rank's experts gets another answer: the experts really are split
    bad = s.split_inputs(ins)
    bad[0]["w_down"] = bad[1]["w_down"]
    wrong = s.gather_outputs(nk.run_ranks(s, bad, world=ep, mode="float64"))["y"]
    assert np.abs(wrong - single).max() > 1e-2 * np.abs(single).max()


def _input_dma_bytes(k) -> dict:
    """Bytes DMAs read from each kernel input (loops multiplied out)."""
    out: dict = {}

    def walk(block, mult):
        for op in block:
            if isinstance(op, N.ForiLoopOp):
                a = op.attrs
                walk(op.regions[0].block, mult * -(-(a["upper"] - a["lower"]) // a["step"]))
            elif isinstance(op, N.DmaCopyOp):
                root = op.access("src").tensor
                while isinstance(root.defining_op, N.HbmViewOp):
                    root = root.defining_op.operand(0)
                out[root.name_hint] = (
                    out.get(root.name_hint, 0) + mult * op.moved.size * root.type.dtype.itemsize
                )

    walk(k.nki.body, 1)
    return out


@pytest.mark.parametrize(
    "plan, kinds",
    [
        (MOE_EP_PLAN, [N.AllGatherOp, N.AllToAllOp, N.ReduceScatterOp]),
        (MOE_EP_REPLICATED_PLAN, [N.AllReduceOp]),
    ],
    ids=["tokens_sharded", "tokens_replicated"],
)
@pytest.mark.parametrize("ep", [2, 4])
def test_expert_parallel_kernels_match_the_float64_reference(moe, ep, plan, kinds):
    g, ins, want = moe
    s = nk.shard(g, world=ep, plan=plan)
    kernels = nk.compile_ranks(s)
    for k in kernels:
        nk.nki.verify(k.nki)
        assert [type(op) for op in k.nki.walk() if isinstance(op, N.CollectiveOp)] == kinds
        assert all(op.attrs["world"] == ep for op in k.nki.walk() if isinstance(op, N.CollectiveOp))
        # each rank reads each of its E/N experts' slabs exactly once
        read = _input_dma_bytes(k)
        for name in ("w_gate", "w_up", "w_down"):
            assert read[name] == 16 // ep * EXPERT // 3, (name, read)
    rank_ins = s.split_inputs(ins)
    for run in (nk.run_kernel_ranks, nk.simulate_ranks):
        outs = run(kernels, rank_ins)
        close(s.gather_outputs(outs)["y"], want, nk.bfloat16, f"EP={ep} {run.__name__} vs float64 reference")


def test_full_size_rank_kernel_reads_a_quarter_of_the_experts():
    """Qwen3-30B-A3B shapes, 8 tokens, EP = 4: rank 0's kernel compiled, never run."""
    g = build_moe_dense(tokens=8)
    s = nk.shard(g, world=4, plan=MOE_EP_PLAN)
    k = nk.compile(s.graphs[0])
    slab = 2048 * 768 * 2
    read = _input_dma_bytes(k)
    assert all(read[n] == 32 * slab for n in ("w_gate", "w_up", "w_down")), read  # 128 / 4 experts
    st = k.stats()
    assert st.collective_count == 3
    assert (
        st.collective_bytes
        == s.comm_bytes(0)
        == 3 * 2 * 2048 * 2 + 3 * 128 * 2 * 4 // 4 + 3 * 8 * 2048 * 4 // 4
    )
    assert st.hbm_bytes <= 1.03 * st.min_hbm_bytes, st.summary()


def test_a_single_token_cannot_be_sharded_by_tokens_but_decodes_with_replicated_tokens():
    g = build_moe_dense(tokens=1, **SMALL)
    with pytest.raises(nk.BuildError, match=r"input 'x' .*axis 0 of size 1 is not divisible by world 2"):
        nk.shard(g, world=2, plan=MOE_EP_PLAN)
    ins = moe_inputs(g, seed=5)
    s = nk.shard(g, world=2, plan=MOE_EP_REPLICATED_PLAN)
    outs = nk.run_kernel_ranks(nk.compile_ranks(s), s.split_inputs(ins))
    close(outs[1]["y"], moe_reference(**ins)["y"], nk.bfloat16, "one decode token, EP=2")


def test_expert_axis_must_divide():
    with pytest.raises(
        nk.BuildError, match=r"input 'w_gate' .*axis 0 of size 16 is not divisible by world 3"
    ):
        nk.shard(build_moe_dense(tokens=6, **SMALL), world=3, plan=MOE_EP_REPLICATED_PLAN)
