"""Model building blocks written as plain NumPy functions (numpy_workloads.py) trace into graphs
whose tensor-interpreter and compiled-kernel (NKI interpreter) results match the same function
run by NumPy on float64 copies of the inputs.

Tolerance: the output dtype's (f32: 1e-5, bf16: 1e-2, relative to max(|ref|, 1))."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing import assert_close

from . import numpy_workloads as W
from .helpers import as_tuple, to64

rng = np.random.default_rng(3)


def normal(*shape, scale=1.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


BF16 = ml_dtypes.bfloat16
# name -> (function, example inputs)
CASES = {
    "rmsnorm": (W.rmsnorm, (normal(2, 64, 256), normal(256))),
    "rmsnorm_bf16": (W.rmsnorm, (normal(128, 256, dtype=BF16), normal(256, dtype=BF16))),
    "layernorm": (W.layernorm, (normal(128, 256), normal(256), normal(256))),
    "softmax": (W.softmax, (normal(2, 4, 64, 128, scale=3.0),)),
    "rope": (W.rope, (normal(1, 64, 4, 64), normal(1, 64, 2, 64), normal(64, 32), normal(64, 32))),
    "swiglu_mlp": (
        W.swiglu_mlp,
        (normal(128, 256), normal(256, 512, scale=0.1), normal(256, 256, scale=0.1)),
    ),
    "clamped_swiglu": (W.clamped_swiglu, (normal(128, 256, scale=4.0), normal(128, 256, scale=4.0))),
    "gelu_tanh": (W.gelu_tanh, (normal(128, 256, scale=2.0),)),
    "attention": (W.attention, (normal(2, 128, 64), normal(2, 128, 64), normal(2, 128, 64))),
    "gqa_attention_layer": (
        W.gqa_attention_layer,
        (normal(128, 256), normal(256, 512, scale=0.1), normal(256, 256, scale=0.1)),
    ),
    "qwen3_layer": (
        W.qwen3_layer,
        (
            normal(1, 64, 128),
            normal(128),
            normal(128, 256, scale=0.1),
            normal(128, 128, scale=0.1),
            normal(32),
            normal(32),
            normal(64, 16),
            normal(64, 16),
            normal(128),
            normal(128, 384, scale=0.1),
            normal(192, 128, scale=0.1),
        ),
    ),
}


def _reference(fn, args):
    return as_tuple(fn(*[to64(a) for a in args]))


def _check(got: dict, graph, ref, what):
    assert list(got) == list(graph.outputs)
    for name, r in zip(graph.outputs, ref):
        dt = graph.outputs[name].dtype
        assert_close(got[name], r, dt, what=f"{what}.{name}")


@pytest.fixture(scope="module")
def traced():
    return {name: nk.trace(fn).trace(*args) for name, (fn, args) in CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_workload_trace_runs_like_numpy(name, traced):
    fn, args = CASES[name]
    g = traced[name]
    _check(nk.run(g, dict(zip(g.input_names, args))), g, _reference(fn, args), name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_workload_trace_compiles_and_runs_like_numpy(name, traced):
    fn, args = CASES[name]
    g = traced[name]
    kernel = nk.compile(g)
    _check(kernel.run(dict(zip(g.input_names, args))), g, _reference(fn, args), name)


def test_workload_signatures_and_dtypes(traced):
    """Inputs are named after the parameters; dtypes follow the example arrays."""
    assert traced["rope"].input_names == ["q", "k", "cos", "sin"]
    assert list(traced["rope"].outputs) == ["y0", "y1"]
    assert traced["gqa_attention_layer"].input_names == ["x", "w_qkv", "w_o"]
    g = traced["rmsnorm_bf16"]
    assert [v.dtype for v in g.inputs] == [nk.bfloat16, nk.bfloat16]
    assert g.outputs["y"].dtype is nk.bfloat16


def test_plain_call_is_numpy():
    """Calling the decorated function runs NumPy itself (arrays in, arrays out)."""
    f = nk.trace(W.softmax)
    x = normal(4, 8)
    out = f(x)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, W.softmax(x))
