"""The Qwen3-Embedding-8B decoder layer (hidden 4096, 32/8 heads, head dim 128, intermediate
12288) at seq 128 in bf16 (issue 11 target). Compiling and verifying is fast and runs by
default with count bounds; running it on the interpreters takes minutes (Kernel.run ~110 s on
one core), so the full-size comparison with float64 NumPy is marked slow (NKIGEN_SLOW=1)."""

from __future__ import annotations

import pytest

from nkigen_lite.workloads import get_workload

from ..workload_kernels import workload_kernel
from .scale_helpers import check_three_ways

# relative to the largest output: bf16 weights and activations over K = 12288 contractions
SCALE = 4.0


def test_qwen3_layer_compiles_and_verifies_at_model_size():
    k = workload_kernel("qwen3_layer")  # the session's compile of the default graph
    s = k.stats()
    assert s.hbm_traffic_ratio <= 1.2, s.summary()
    assert s.instructions_dynamic <= 6000, s.summary()


def test_qwen3_layer_matches_float64_at_small_size():
    """Multi-head (kv_heads = heads) with a sequence that is not a multiple of 128; grouped
    query attention at small size is covered by tests/emit/test_workloads.py."""
    w = get_workload("qwen3_layer")
    g = w.graph(seq=130, hidden=256, heads=4, kv_heads=4, head_dim=64, inter=384)
    ins = w.inputs(g, seed=3)
    check_three_ways(g, ins, w.reference(**ins), scale=SCALE)


@pytest.mark.slow
def test_qwen3_layer_matches_float64_at_model_size():
    w = get_workload("qwen3_layer")
    g = w.graph()
    ins = w.inputs(g, seed=0)
    check_three_ways(g, ins, w.reference(**ins), scale=SCALE)
