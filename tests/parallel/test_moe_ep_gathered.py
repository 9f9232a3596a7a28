"""Expert-parallel MoE ranks run their experts through ``tensor.gathered_matmul``
(canonical/expert_matmul.py): every local expert matrix is read by one DMA, the combine sums
the weighted expert outputs with a ones-row matmul, and the rank kernels match the float64
reference after the combine (tests/parallel/test_moe_ep.py runs them on both interpreters).
Counted from the kernels' DMAs; a batched matmul by a 3-D input that is not an expert product
keeps its own lowering."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ops as N
from nkigen_lite.parallel.moe_ep import MOE_EP_PLAN, MOE_EP_REPLICATED_PLAN
from nkigen_lite.workloads.moe import moe_inputs, moe_reference
from nkigen_lite.workloads.moe_dense import build_moe_dense

from ..emit.helpers import close

TABLES = ("w_gate", "w_up", "w_down")
SMALL = {"hidden": 256, "experts": 16, "inter": 512}


def _reads(k) -> dict:
    """{kernel input: (DMAs reading it, bytes read)}, loops multiplied out."""
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
                n, b = out.get(root.name_hint, (0, 0))
                out[root.name_hint] = (n + mult, b + mult * op.moved.size * root.type.dtype.itemsize)

    walk(k.nki.body, 1)
    return out


@pytest.mark.parametrize("plan", [MOE_EP_PLAN, MOE_EP_REPLICATED_PLAN], ids=["tokens_sharded", "replicated"])
@pytest.mark.parametrize("ep", [2, 4])
def test_each_local_expert_matrix_is_one_dma(ep, plan):
    g = build_moe_dense(tokens=4, **SMALL)
    s = nk.shard(g, world=ep, plan=plan)
    local = SMALL["experts"] // ep
    for k in nk.compile_ranks(s):
        assert k.ir("layout").count("tensor.gathered_matmul ") == 3
        reads = _reads(k)
        for name in TABLES:
            size = int(np.prod(k.nki.input(name).type.shape)) * 2
            # the general matmul read these in 128-row chunks: 8 or 12 DMAs per matrix here
            assert reads[name] == (local, size), (name, reads[name])


def test_full_size_rank_reads_each_expert_matrix_in_one_dma():
    """Qwen3-30B-A3B shapes, 8 tokens, EP = 4 (rank 0 compiled, never run): 32 experts."""
    s = nk.shard(build_moe_dense(tokens=8), world=4, plan=MOE_EP_PLAN)
    k = nk.compile(s.graphs[0])
    reads = _reads(k)
    assert all(reads[n] == (32, 32 * 2048 * 768 * 2) for n in TABLES), reads
    st = k.stats()
    assert st.hbm_bytes <= 1.03 * st.min_hbm_bytes, st.summary()


def test_rank_kernels_match_the_float64_reference_after_the_combine():
    g = build_moe_dense(tokens=8, **SMALL)
    ins = moe_inputs(g, seed=7)
    want = moe_reference(**ins)["y"]
    s = nk.shard(g, world=2, plan=MOE_EP_PLAN)
    outs = nk.run_kernel_ranks(nk.compile_ranks(s), s.split_inputs(ins))
    close(s.gather_outputs(outs)["y"], want, nk.bfloat16, "EP=2 rank kernels vs float64 reference")


def test_batched_matmul_by_a_3d_input_that_is_no_expert_product_is_left_alone():
    b = nk.Builder("pv")
    p = b.add_input("p", (4, 64, 64), nk.bfloat16)
    v = b.add_input("v", (4, 64, 128), nk.bfloat16)
    b.set_outputs({"o": b.exp(p) @ v})  # (heads, q, k) @ (heads, k, d): attention's P @ V
    k = nk.compile(b.graph)
    assert "gathered_matmul" not in k.ir("layout")
    rng = np.random.default_rng(0)
    ins = {"p": rng.standard_normal((4, 64, 64)) * 0.1, "v": rng.standard_normal((4, 64, 128))}
    ins = {n: a.astype(nk.bfloat16.np_dtype) for n, a in ins.items()}
    want = np.exp(ins["p"].astype(np.float64)) @ ins["v"].astype(np.float64)
    close(k.run(ins)["o"], want, nk.bfloat16, "P @ V")
