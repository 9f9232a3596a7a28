"""Elementwise chains: a GELU-tanh written in NumPy, and a clamped SwiGLU (gpt-oss)."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import float32, get_dtype
from ..tensor.builder import Builder
from .registry import Workload, register


def build_gelu_tanh(shape=(1024, 2048), dtype=float32):
    b = Builder("gelu_tanh")
    x = b.add_input("x", shape, get_dtype(dtype))
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    b.set_outputs({"y": 0.5 * x * (1.0 + b.tanh(inner))})
    return b.graph


def gelu_tanh_reference(x):
    x = np.asarray(x, np.float64)
    return {"y": 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))}


def build_clamped_swiglu(shape=(128, 1440), dtype=float32, alpha=1.702, limit=7.0):
    b = Builder("clamped_swiglu")
    dt = get_dtype(dtype)
    g = b.add_input("g", shape, dt)
    u = b.add_input("u", shape, dt)
    g2 = b.minimum(g, limit)
    u2 = b.clip(u, -limit, limit)
    b.set_outputs({"y": (u2 + 1.0) * (g2 * (1 / (1 + b.exp(-alpha * g2))))})
    return b.graph


def clamped_swiglu_reference(g, u, alpha=1.702, limit=7.0):
    g, u = np.asarray(g, np.float64), np.asarray(u, np.float64)
    g = np.minimum(g, limit)
    u = np.clip(u, -limit, limit)
    return {"y": (u + 1) * (g / (1 + np.exp(-alpha * g)))}


GELU = register(
    Workload(
        "gelu_tanh",
        build_gelu_tanh,
        gelu_tanh_reference,
        {"shape": (1024, 2048)},
        "tanh-approximated GELU chain",
    )
)
CLAMPED = register(
    Workload(
        "clamped_swiglu",
        build_clamped_swiglu,
        clamped_swiglu_reference,
        {"shape": (128, 1440)},
        "gpt-oss clamped SwiGLU activation",
    )
)
