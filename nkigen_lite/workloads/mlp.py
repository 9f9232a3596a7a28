"""SwiGLU MLP (Qwen3 feed-forward) and a plain matmul, as NumPy users write them."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import float32, get_dtype
from ..tensor.builder import Builder
from .registry import Workload, register


def build_swiglu_mlp(tokens=128, hidden=256, inter=512, dtype=float32):
    b = Builder("swiglu_mlp")
    dt = get_dtype(dtype)
    x = b.add_input("x", (tokens, hidden), dt)
    wg = b.add_input("w_gate", (hidden, inter), dt)
    wu = b.add_input("w_up", (hidden, inter), dt)
    wd = b.add_input("w_down", (inter, hidden), dt)
    g = x @ wg
    u = x @ wu
    act = g * (1 / (1 + b.exp(-g)))  # silu written out, as users write it
    b.set_outputs({"y": (act * u) @ wd})
    return b.graph


def swiglu_mlp_reference(x, w_gate, w_up, w_down):
    x, wg, wu, wd = (np.asarray(a, np.float64) for a in (x, w_gate, w_up, w_down))
    g = x @ wg
    return {"y": (g / (1 + np.exp(-g)) * (x @ wu)) @ wd}


def build_matmul(m=256, k=384, n=1024, dtype=float32):
    b = Builder("matmul")
    dt = get_dtype(dtype)
    a = b.add_input("a", (m, k), dt)
    w = b.add_input("b", (k, n), dt)
    b.set_outputs({"y": a @ w})
    return b.graph


def matmul_reference(a, b):
    return {"y": np.asarray(a, np.float64) @ np.asarray(b, np.float64)}


SWIGLU = register(
    Workload(
        "swiglu_mlp",
        build_swiglu_mlp,
        swiglu_mlp_reference,
        {"tokens": 128, "hidden": 256, "inter": 512},
        "SwiGLU MLP: (silu(x@Wg) * (x@Wu)) @ Wd",
    )
)
MATMUL = register(
    Workload("matmul", build_matmul, matmul_reference, {"m": 256, "k": 384, "n": 1024}, "matmul (M,K)@(K,N)")
)
