"""Each rank of the tensor-parallel Qwen3 layer (bf16) takes the single-kernel layer paths of the
unsharded layer (docs/lowering.md): the front row pipeline (q, k, v written once, nothing else of
the front in HBM), ``tensor.causal_attention`` over its 16/TP heads, O written in place for the
O projection, the MLP block. Counted per rank from the kernel's DMAs; the rank kernels run on the
NKI interpreter and the simulator against the float64 NumPy reference of the whole layer."""

import ml_dtypes
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
from nkigen_lite.perf.traffic import bytes_by_tensor

BF16 = 2  # bytes


def _rank_kernel(seq, tp):
    s = nk.shard(build_qwen3_layer(seq=seq, dtype=nk.bfloat16), world=tp, plan=QWEN3_TP_PLAN)
    return s, nk.compile(s.graphs[0])


@pytest.mark.parametrize("tp", [2, 4])
def test_each_rank_moves_q_k_v_and_o_once_and_reads_each_weight_once(tp):
    seq, d = 512, QWEN3_0_6B
    hidden, hd = d["hidden"], d["head_dim"]
    s, k = _rank_kernel(seq, tp)
    assert "tensor.causal_attention" in k.ir("layout")  # attention over this rank's heads
    traffic = bytes_by_tensor(k.nki)
    for name in ("w_q", "w_k", "w_v", "w_o", "w_gate", "w_up", "w_down"):
        t = s.graphs[0].input(name).type
        assert traffic[name] == {"read": int(np.prod(t.shape)) * BF16, "write": 0}, name
    # h: read by the front and, after the first all_reduce, by the residual add
    assert traffic["h"]["read"] == 2 * seq * hidden * BF16
    assert traffic["y"]["write"] == seq * hidden * BF16
    # Through HBM scratch at most: q, k, v (when the front stores them) and O (attention's
    # result, in the merged (seq, heads·dim) layout) written once and read once, and the
    # collectives' staging:
    # the two partial sums written, the two all-reduced results read, h2 (read after the second
    # all_reduce) written and read. The layer before these paths moved q and k through HBM at
    # every step of the front (18.9 MB at TP = 2, 12.6 MB at TP = 4).
    per_rank = seq * (d["heads"] * 2 + d["kv_heads"] * 2) * hd // tp * BF16
    staging = 6 * seq * hidden * BF16
    scratch = sum(v["read"] + v["write"] for n, v in traffic.items() if n.startswith("scratch"))
    assert scratch <= 2 * per_rank + staging, scratch


SMALL = {"hidden": 256, "heads": 4, "kv_heads": 2, "inter": 512}
SEQ = 256  # more than 128 keys: the causal_attention path
TOL = 2e-2  # bf16 kernels (q, k, v, P, O, h2 and the MLP rounded to bf16) against float64,
#             relative to the output's largest magnitude; measured 5.1e-3


def test_rank_kernels_on_the_fast_paths_match_the_float64_reference():
    ins = {n: a.astype(ml_dtypes.bfloat16) for n, a in qwen3_inputs(seq=SEQ, **SMALL).items()}
    want = qwen3_reference(ins, heads=SMALL["heads"], kv_heads=SMALL["kv_heads"])["y"]
    s = nk.shard(build_qwen3_layer(seq=SEQ, dtype=nk.bfloat16, **SMALL), world=2, plan=QWEN3_TP_PLAN)
    kernels = nk.compile_ranks(s)
    assert all("tensor.causal_attention" in k.ir("layout") for k in kernels)
    split = s.split_inputs(ins)
    scale = np.abs(want).max()
    for outs in (nk.run_kernel_ranks(kernels, split), nk.simulate_ranks(kernels, split)):
        assert np.abs(outs[0]["y"].astype(np.float64) - want).max() <= TOL * scale
        assert all(o["y"].tobytes() == outs[0]["y"].tobytes() for o in outs)
