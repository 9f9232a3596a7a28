"""The Qwen3-30B-A3B MoE block workload (nkigen_lite/workloads/moe.py): router softmax over the
experts, top-k, renormalised weights, the selected experts' SwiGLU MLPs on gathered weights.

Correctness at reduced sizes (the full expert tables are 1.2 GB): nk.run (float64 mode),
Kernel.run (NKI interpreter) and nk.simulate against the independent float64 reference;
tolerance: bf16 (1e-2 relative, absolute scaled by max|reference|, tests/emit/helpers.py).
Traffic: count-based, at reduced and at full size (compile only, nothing allocated): each
selected expert slab read once (tokens·k <= experts), each expert once (tokens·k > experts)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ops as N
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.moe import moe_min_hbm_bytes, moe_reference, routing_margin

from ..emit.helpers import close

SMALL = {"hidden": 256, "experts": 16, "inter": 128}  # top-8 of 16 experts


def _gather_bytes_by_table(k) -> dict:
    """Bytes the indirect gathers read, per kernel input (loops multiplied out)."""
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


@pytest.mark.parametrize("tokens", [1, 4, 8])
def test_moe_matches_float64_reference_through_both_interpreters_and_the_simulator(tokens):
    w = get_workload("moe")
    g = w.graph(tokens=tokens, **SMALL)
    ins = w.inputs(g, seed=tokens)
    assert routing_margin(ins["x"], ins["w_router"], 8) > 1e-6  # the selection is unambiguous
    ref = moe_reference(**ins)["y"]
    k = nk.compile(g)
    for what, got in (
        ("nk.run float64", nk.run(g, ins, mode="float64")["y"]),
        ("nk.run", nk.run(g, ins)["y"]),
        ("Kernel.run", k.run(ins)["y"]),
        ("nk.simulate", nk.simulate(k, ins)["y"]),
    ):
        assert got.shape == (tokens, SMALL["hidden"]), what
        assert what == "nk.run float64" or got.dtype == nk.bfloat16.np_dtype, what
        close(got, ref, nk.bfloat16, f"moe tokens={tokens}: {what} vs float64 reference")


def test_moe_with_another_k_and_f32():
    w = get_workload("moe")
    g = w.graph(tokens=3, hidden=192, experts=6, top_k=2, inter=160, dtype=nk.float32)
    ins = w.inputs(g, seed=5)
    ref = moe_reference(**ins, top_k=2)["y"]
    k = nk.compile(g)
    for got in (k.run(ins)["y"], nk.simulate(k, ins)["y"]):
        close(got, ref, nk.float32, "moe top-2 f32 vs float64 reference")
    # the reference is not vacuous: a wrong k gives another answer
    assert np.abs(moe_reference(**ins, top_k=3)["y"] - ref).max() > 1e-3 * np.abs(ref).max()


def test_moe_reference_is_the_dense_formula():
    """The per-token loop agrees with a dense float64 formulation (every expert computed, the
    unselected ones weighted 0)."""
    w = get_workload("moe")
    g = w.graph(tokens=4, **SMALL)
    a = {n: v.astype(np.float64) for n, v in w.inputs(g, seed=2).items()}
    logits = a["x"] @ a["w_router"]
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    kth = np.sort(p, -1)[:, -8][:, None]
    gate = np.where(p >= kth, p, 0.0)
    gate /= gate.sum(-1, keepdims=True)
    h = np.einsum("th,ehi->tei", a["x"], a["w_gate"])
    act = h / (1 + np.exp(-h)) * np.einsum("th,ehi->tei", a["x"], a["w_up"])
    dense = np.einsum("te,tei,eih->th", gate, act, a["w_down"])
    np.testing.assert_allclose(moe_reference(**a)["y"], dense, rtol=1e-10, atol=1e-12)


def _table_reads(k) -> dict:
    """Bytes read from each expert table by any DMA (perf/traffic.py)."""
    t = bytes_by_tensor(k.nki)
    return {n: t.get(n, {}).get("read", 0) for n in ("w_gate", "w_up", "w_down")}


@pytest.mark.parametrize("tokens", [1, 2])
def test_moe_reads_each_selected_expert_slab_once_straight_from_the_tables(tokens):
    """tokens·k <= experts: one indirect DMA per selection reads its slab into SBUF
    (tensor.gathered_matmul), no gathered copy goes through HBM."""
    k = nk.compile(get_workload("moe").graph(tokens=tokens, **SMALL))
    n, slab = tokens * 8, SMALL["hidden"] * SMALL["inter"] * 2
    want = dict.fromkeys(("w_gate", "w_up", "w_down"), n * slab)
    assert _gather_bytes_by_table(k) == want
    assert _table_reads(k) == want  # nothing else reads the tables
    s = k.stats()
    assert s.min_hbm_bytes == moe_min_hbm_bytes(tokens, top_k=8, **SMALL)
    assert s.hbm_bytes <= 1.05 * s.min_hbm_bytes, s.summary()


def test_moe_with_more_selections_than_experts_reads_every_table_once():
    """tokens·k > experts (4 tokens select 32 slabs of 16 experts): every expert's weights are
    read once (the dense form of canonical/gathered_matmul.py), never per selection."""
    k = nk.compile(get_workload("moe").graph(tokens=4, **SMALL))
    table = SMALL["experts"] * SMALL["hidden"] * SMALL["inter"] * 2
    assert _table_reads(k) == dict.fromkeys(("w_gate", "w_up", "w_down"), table)
    gathered = _gather_bytes_by_table(k)  # by a gathered_matmul over ids 0 … E-1, all tokens each
    assert {t: gathered[t] for t in ("w_gate", "w_up", "w_down")} == _table_reads(k)
    s = k.stats()
    assert s.min_hbm_bytes == moe_min_hbm_bytes(4, top_k=8, **SMALL)


@pytest.mark.parametrize(("tokens", "bound"), [(8, 1.01), (64, 1.2)])
def test_moe_full_size_compiles_and_moves_close_to_the_minimum(tokens, bound):
    """Qwen3-30B-A3B shapes (128 experts, hidden 2048, intermediate 768, top-8): compiled, never
    run (the tables are 1.2 GB). 8 tokens: 64 selections, each slab gathered once; 64 tokens:
    512 selections of 128 experts, each expert read once."""
    k = nk.compile(get_workload("moe").graph(tokens=tokens))
    slab = 2048 * 768 * 2
    per_table = min(tokens * 8, 128) * slab
    assert _table_reads(k) == dict.fromkeys(("w_gate", "w_up", "w_down"), per_table)
    s = k.stats()
    assert s.min_hbm_bytes == moe_min_hbm_bytes(tokens, 2048, 128, 8, 768)
    assert s.hbm_bytes <= bound * s.min_hbm_bytes, s.summary()
    assert s.hbm_spills == 0
