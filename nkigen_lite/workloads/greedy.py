"""Greedy sampling: the int32 index of the largest of each row of fp32 logits (the Qwen3 vocab:
151,936 columns), ties to the lower index as ``np.argmax``. Built on ``b.argmax``, which
compiles to the native top-1 (max8 / find_index8 per chunk of the row): one pass over the
logits."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import float32, get_dtype
from ..tensor.builder import Builder
from .registry import Workload, register


def build_greedy(rows=1, vocab=151936, dtype=float32):
    b = Builder("greedy")
    logits = b.add_input("logits", (rows, vocab), get_dtype(dtype))
    b.set_outputs({"ids": b.argmax(logits, axis=-1)})
    return b.graph


def greedy_reference(logits):
    """The first index of each row's maximum (NumPy's argmax), as int64."""
    return {"ids": np.argmax(np.asarray(logits, np.float64), axis=-1)}


def greedy_inputs(graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Unit normal logits with a planted tie per row: the row maximum appears at two columns
    (the lower one drawn anywhere in the row's first half), so the tie rule is exercised."""
    rng = np.random.default_rng(seed)
    t = graph.inputs[0].type
    rows, vocab = t.shape
    x = rng.standard_normal((rows, vocab))
    for r in range(rows):
        lo = int(rng.integers(0, vocab // 2))
        hi = int(rng.integers(lo + 1, vocab))
        x[r, [lo, hi]] = x[r].max() + 1.0
    return {graph.input_names[0]: x.astype(t.dtype.np_dtype)}


class _GreedyWorkload(Workload):
    def inputs(self, graph, seed: int = 0) -> dict[str, np.ndarray]:
        return greedy_inputs(graph, seed)


GREEDY = register(
    _GreedyWorkload(
        "greedy_sampling",
        build_greedy,
        greedy_reference,
        {"rows": 1, "vocab": 151936},
        "greedy sampling: argmax over 151,936 fp32 logits per row (ties to the lower index)",
    )
)
