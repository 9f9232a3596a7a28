"""Every workload, two shapes each (one f32, one bf16 with dims that are not multiples of 128):
the emitted module on the simulator ≡ Kernel.run ≡ nk.run, and all of them close to the
workload's independent float64 reference (tolerances: tests/emit/helpers.py)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.registry import WORKLOADS, _load_all

from .helpers import close, three_way

CASES = [
    ("softmax", {"shape": (256, 512)}),
    ("softmax", {"shape": (300, 200), "dtype": nk.bfloat16}),
    ("rmsnorm", {"shape": (128, 1024)}),
    ("rmsnorm", {"shape": (200, 384), "dtype": nk.bfloat16}),
    ("layernorm", {"shape": (128, 1024)}),
    ("layernorm", {"shape": (130, 256), "dtype": nk.bfloat16}),
    ("gelu_tanh", {"shape": (300, 700)}),
    ("gelu_tanh", {"shape": (129, 512), "dtype": nk.bfloat16}),
    ("clamped_swiglu", {"shape": (128, 1440)}),
    ("clamped_swiglu", {"shape": (250, 300), "dtype": nk.bfloat16}),
    ("attention", {"seq": 128, "d": 64}),
    ("attention", {"seq": 200, "d": 96, "dtype": nk.bfloat16}),
    ("rope", {"batch": 1, "seq": 128, "heads": 16, "d": 128}),
    ("rope", {"batch": 2, "seq": 100, "heads": 4, "d": 64, "dtype": nk.bfloat16}),
    ("swiglu_mlp", {"tokens": 128, "hidden": 256, "inter": 512}),
    ("swiglu_mlp", {"tokens": 130, "hidden": 192, "inter": 320, "dtype": nk.bfloat16}),
    ("embedding", {"vocab": 1000, "hidden": 256, "tokens": 128, "dtype": nk.float32}),
    ("embedding", {"vocab": 3001, "hidden": 200, "tokens": 300, "dtype": nk.bfloat16}),
    ("moe", {"tokens": 4, "hidden": 256, "experts": 16, "inter": 128, "dtype": nk.float32}),
    ("moe", {"tokens": 3, "hidden": 192, "experts": 12, "inter": 160, "dtype": nk.bfloat16}),
    ("greedy_sampling", {"rows": 3, "vocab": 5000}),
    (
        "qwen3_decode",
        {"hidden": 256, "heads": 4, "kv_heads": 2, "head_dim": 64, "inter": 512, "max_seq": 256},
    ),
    ("gptoss_sink_attention", {"seq": 128, "heads": 4, "kv_heads": 2, "head_dim": 64}),
    ("gptoss_sink_attention_sliding", {"seq": 200, "heads": 2, "kv_heads": 1, "head_dim": 64}),
    ("matmul", {"m": 256, "k": 384, "n": 1024}),
    ("matmul", {"m": 200, "k": 300, "n": 700, "dtype": nk.bfloat16}),
    (
        "qwen3_layer",
        {
            "seq": 128,
            "hidden": 256,
            "heads": 4,
            "kv_heads": 2,
            "head_dim": 64,
            "inter": 512,
            "dtype": nk.float32,
        },
    ),
    (
        "qwen3_layer",
        {
            "seq": 100,
            "hidden": 192,
            "heads": 4,
            "kv_heads": 1,
            "head_dim": 32,
            "inter": 320,
            "dtype": nk.bfloat16,
        },
    ),
]


def _id(case):
    name, opts = case
    return name + "-" + "-".join(str(v).replace(" ", "") for v in opts.values())


def test_the_cases_cover_every_workload():
    _load_all()
    assert {name for name, _ in CASES} == set(WORKLOADS)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_emitted_workload_agrees_three_ways(case):
    name, opts = case
    w = get_workload(name)
    g = w.graph(**opts)
    x = w.inputs(g, seed=1)
    k = nk.compile(g)
    three_way(g, x, k)
    simulated = nk.simulate(k, x)
    ref = w.reference(**{n: a.astype(np.float64) for n, a in x.items()})
    for out, v in g.outputs.items():
        close(simulated[out], ref[out], v.type.dtype, f"{name}.{out}: simulator vs float64 reference")


def test_the_emitted_source_runs_from_text_with_graph_input_names():
    w = get_workload("layernorm")
    g = w.graph(shape=(130, 256))
    x = w.inputs(g)
    k = nk.compile(g)
    got = nk.simulate(k.nki_source(), x)
    want = k.run(x)
    assert list(got) == ["y"]
    close(got["y"], want["y"], nk.float32, "layernorm from source text")
