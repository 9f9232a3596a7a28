"""RMSNorm and LayerNorm over the last axis (Qwen3 / gpt-oss style)."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import float32, get_dtype
from ..tensor.builder import Builder
from .registry import Workload, register


def build_rmsnorm(shape=(128, 1024), dtype=float32, eps=1e-6):
    b = Builder("rmsnorm")
    dt = get_dtype(dtype)
    x = b.add_input("x", shape, dt)
    w = b.add_input("w", (shape[-1],), dt)
    xf, wf = x.astype(float32), w.astype(float32)
    ms = b.mean(xf * xf, axis=-1, keepdims=True)
    b.set_outputs({"y": (xf / b.sqrt(ms + eps) * wf).astype(dt)})
    return b.graph


def rmsnorm_reference(x, w, eps=1e-6):
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    return {"y": x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w}


def build_layernorm(shape=(128, 1024), dtype=float32, eps=1e-5):
    b = Builder("layernorm")
    dt = get_dtype(dtype)
    x = b.add_input("x", shape, dt)
    w = b.add_input("w", (shape[-1],), dt)
    bias = b.add_input("b", (shape[-1],), dt)
    mu = b.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = b.mean(xc * xc, axis=-1, keepdims=True)
    b.set_outputs({"y": xc / b.sqrt(var + eps) * w + bias})
    return b.graph


def layernorm_reference(x, w, b, eps=1e-5):
    x, w, b = (np.asarray(a, np.float64) for a in (x, w, b))
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return {"y": (x - mu) / np.sqrt(var + eps) * w + b}


RMSNORM = register(
    Workload("rmsnorm", build_rmsnorm, rmsnorm_reference, {"shape": (128, 1024)}, "RMSNorm with fp32 upcast")
)
LAYERNORM = register(
    Workload(
        "layernorm",
        build_layernorm,
        layernorm_reference,
        {"shape": (128, 1024)},
        "LayerNorm with weight and bias",
    )
)
