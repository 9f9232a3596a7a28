"""Row softmax over the last axis, written the way NumPy users write it."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import float32, get_dtype
from ..tensor.builder import Builder
from .registry import Workload, register


def build_softmax(shape=(256, 512), dtype=float32):
    b = Builder("softmax")
    x = b.add_input("x", shape, get_dtype(dtype))
    e = b.exp(x - b.max(x, axis=-1, keepdims=True))
    b.set_outputs({"y": e / b.sum(e, axis=-1, keepdims=True)})
    return b.graph


def softmax_reference(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return {"y": e / e.sum(axis=-1, keepdims=True)}


SOFTMAX = register(
    Workload(
        "softmax", build_softmax, softmax_reference, {"shape": (256, 512)}, "row softmax: exp(x - max) / sum"
    )
)
