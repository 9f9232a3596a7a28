"""The sharded Qwen3-0.6B layer at TP = 2 and 4, compiled: every rank's graph compiles to an NKI
kernel that passes the hardware verifier, holds the two all_reduces (as nki.all_reduce) and, run
across ranks on the rank-parallel NKI interpreter and as simulated ranks of the emitted modules,
matches the unsharded float64 NumPy reference (qwen3_reference, written independently)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllReduceOp
from nkigen_lite.parallel.qwen3 import QWEN3_TP_PLAN, build_qwen3_layer, qwen3_inputs, qwen3_reference

SEQ = 8
TOL = 1e-5  # fp32 kernels against float64, relative to the output's largest magnitude


@pytest.fixture(scope="module")
def layer():
    inputs = qwen3_inputs(seq=SEQ)
    return build_qwen3_layer(seq=SEQ), inputs, qwen3_reference(inputs)["y"]


@pytest.mark.parametrize("tp", [2, 4])
def test_sharded_qwen3_layer_kernels_match_the_float64_reference(layer, tp):
    g, inputs, want = layer
    s = nk.shard(g, world=tp, plan=QWEN3_TP_PLAN)
    kernels = nk.compile_ranks(s)
    for k in kernels:
        nk.nki.verify(k.nki)
        ars = [op for op in k.nki.walk() if isinstance(op, AllReduceOp)]
        assert [op.attrs["world"] for op in ars] == [tp, tp]
        assert k.stats().collective_bytes == 2 * 2 * (tp - 1) * SEQ * 1024 * 4 // tp
    ins = s.split_inputs(inputs)
    scale = np.abs(want).max()
    for outs in (nk.run_kernel_ranks(kernels, ins), nk.simulate_ranks(kernels, ins)):
        assert np.abs(outs[0]["y"] - want).max() <= TOL * scale
        assert all(o["y"].tobytes() == outs[0]["y"].tobytes() for o in outs)  # every rank agrees
