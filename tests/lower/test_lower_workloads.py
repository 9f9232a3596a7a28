"""Workloads compiled end to end: each passes the hardware verifier (compile runs it) and its
NKI-interpreter outputs match an independent float64 NumPy reference within the dtype
tolerance, scaled for long reductions (tolerance model: nkigen_lite.testing.tolerance)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing.tolerance import assert_close, tolerance_for
from nkigen_lite.workloads import get_workload

# (workload, shape options, dtype, tolerance scale for summation length / chained rounding)
CASES = [
    ("softmax", {"shape": (300, 700)}, nk.float32, 1),
    ("softmax", {"shape": (2, 3, 129, 64)}, nk.bfloat16, 1),
    ("rmsnorm", {"shape": (200, 1000)}, nk.float32, 1),
    ("rmsnorm", {"shape": (1, 128, 1024)}, nk.bfloat16, 1),
    ("layernorm", {"shape": (130, 384)}, nk.float32, 4),
    ("layernorm", {"shape": (64, 256)}, nk.float16, 2),
    ("gelu_tanh", {"shape": (300, 257)}, nk.float32, 1),
    ("clamped_swiglu", {"shape": (33, 1440)}, nk.bfloat16, 2),
    ("rope", {"batch": 1, "seq": 130, "heads": 4, "d": 64}, nk.float32, 1),
    ("rope", {"batch": 2, "seq": 16, "heads": 8, "d": 128}, nk.bfloat16, 1),
    ("attention", {"seq": 128, "d": 64}, nk.float32, 4),
    ("attention", {"seq": 200, "d": 96}, nk.float32, 8),
    ("swiglu_mlp", {"tokens": 130, "hidden": 192, "inter": 320}, nk.float32, 32),
    ("matmul", {"m": 256, "k": 384, "n": 1024}, nk.float32, 32),
    ("matmul", {"m": 100, "k": 300, "n": 600}, nk.bfloat16, 8),
]


@pytest.mark.parametrize(
    "name,opts,dtype,scale", CASES, ids=[f"{c[0]}-{c[2]}-{'x'.join(map(str, c[1].values()))}" for c in CASES]
)
def test_workload_matches_float64_reference(name, opts, dtype, scale):
    w = get_workload(name)
    g = w.graph(**opts, dtype=dtype)
    k = nk.compile(g)
    inputs = w.inputs(g, seed=3)
    got = k.run(inputs)
    ref = w.reference(**inputs)
    rtol, atol = tolerance_for(dtype)
    for out, r in ref.items():
        mag = max(1.0, float(np.max(np.abs(r))))
        assert_close(got[out], r, dtype, what=f"{name} {out}", rtol=rtol * scale, atol=atol * scale * mag)


@pytest.mark.parametrize(
    "name",
    [
        "softmax",
        "rmsnorm",
        "layernorm",
        "rope",
        "attention",
        "swiglu_mlp",
        "matmul",
        "gelu_tanh",
        "clamped_swiglu",
    ],
)
def test_compile_is_deterministic(name):
    g = get_workload(name).graph()
    assert nk.compile(g).ir("nki") == nk.compile(g).ir("nki")


def test_compile_does_not_modify_the_input_graph():
    g = get_workload("softmax").graph()
    before = str(g)
    nk.compile(g)
    assert str(g) == before
