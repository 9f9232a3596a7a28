"""`nk.jit`: positional arrays, one trace + compile per signature, backends, static arguments."""

from __future__ import annotations

import importlib.util

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing.tolerance import assert_close


def _softmax64(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NKIGEN_LITE_CACHE", str(tmp_path / "cache"))


@nk.jit
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_decorator_compiles_once_per_signature():
    f = nk.jit(softmax.traced.fn)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 256)).astype(np.float32)
    b = rng.standard_normal((128, 256)).astype(np.float32)
    assert_close(f(a), _softmax64(a), "float32")
    assert_close(f(b), _softmax64(b), "float32")
    assert f.counts == {"traces": 1, "compiles": 1, "disk_hits": 0, "memory_hits": 1}
    c = rng.standard_normal((64, 128)).astype(ml_dtypes.bfloat16)  # new shape and dtype
    assert_close(f(c), _softmax64(c), "bfloat16")
    assert f.counts["traces"] == 2 and f.counts["compiles"] == 2


@pytest.mark.parametrize("backend", ["interpreter", "simulator"])
def test_backends_agree_with_float64(backend):
    f = nk.jit(backend=backend)(lambda x, w: np.tanh(x @ w))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 64)).astype(np.float32)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    assert_close(f(x, w), np.tanh(x.astype(np.float64) @ w.astype(np.float64)), "float32")


@pytest.mark.skipif(importlib.util.find_spec("nki") is not None, reason="the Neuron SDK is here")
def test_device_backend_without_the_sdk_says_what_is_missing():
    f = nk.jit(lambda x: x * 2, backend="device")
    with pytest.raises(nk.NeuronSdkMissing, match=r"backend='device'\) needs the Neuron SDK"):
        f(np.ones((4, 4), np.float32))
    with pytest.raises(nk.BuildError, match="backend 'gpu' is not one of"):
        nk.jit(lambda x: x, backend="gpu")


def test_static_arguments_key_the_cache_and_outputs_keep_their_structure():
    @nk.jit
    def f(x, scale, mode="sum"):
        y = x * scale
        return (y.sum(axis=-1), y.max(axis=-1)) if mode == "sum" else {"out": y}

    x = np.random.default_rng(2).standard_normal((128, 32)).astype(np.float32)
    s, m = f(x, 2.0)
    assert_close(s, (x.astype(np.float64) * 2).sum(-1), "float32")
    assert_close(m, (x.astype(np.float64) * 2).max(-1), "float32")
    out = f(x, 3.0, mode="dict")
    assert set(out) == {"out"}
    assert_close(out["out"], x.astype(np.float64) * 3, "float32")
    f(x, 2.0)
    assert f.counts["traces"] == 2 and f.counts["memory_hits"] == 1


def test_containers_of_arrays_and_float64_inputs():
    @nk.jit
    def f(ws, x):
        return x @ ws["a"] + ws["b"]

    rng = np.random.default_rng(3)
    x = rng.standard_normal((128, 64))  # float64: traced as float32, with a warning
    ws = {
        "a": rng.standard_normal((64, 16)).astype(np.float32),
        "b": rng.standard_normal(16).astype(np.float32),
    }
    with pytest.warns(nk.NkWarning, match="float64 becomes a f32 input"):
        y = f(ws, x)
    assert y.dtype == np.float32
    assert_close(y, x @ ws["a"].astype(np.float64) + ws["b"], "float32")


def test_kernel_call_and_compile_with_examples():
    x = np.random.default_rng(4).standard_normal((128, 256)).astype(np.float32)
    k = nk.compile(softmax.traced.fn, x)
    assert_close(k(x), _softmax64(x), "float32")
    assert k(x).shape == (128, 256)
    k2 = softmax.kernel(x)
    assert isinstance(k2, nk.Kernel) and k2.input_names == ["x"]
    with pytest.raises(nk.BuildError, match="takes no example arguments"):
        nk.compile(k.nki, x)
    with pytest.raises(nk.BuildError, match=r"for a dict of inputs use kernel.run\(inputs\)"):
        k({"x": x})
