"""Workload registry: a graph builder, its NumPy float64 reference, and input generation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..ir.errors import BuildError
from ..ir.graph import Graph


@dataclass(frozen=True)
class Workload:
    """A named program: ``build(**opts)`` makes the graph, ``reference(**inputs)`` computes the
    expected outputs in float64 NumPy, ``defaults`` are the default shape options."""

    name: str
    build: Callable[..., Graph]
    reference: Callable[..., dict]
    defaults: dict = field(default_factory=dict)
    description: str = ""

    def graph(self, **opts) -> Graph:
        return self.build(**{**self.defaults, **opts})

    def inputs(self, graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
        """Random inputs for ``graph`` (standard normal floats, small non-negative ints)."""
        rng = np.random.default_rng(seed)
        out = {}
        for name, v in zip(graph.input_names, graph.inputs):
            t = v.type
            if t.dtype.is_float:
                a = rng.standard_normal(t.shape).astype(np.float32)
            elif t.dtype.is_bool:
                a = rng.random(t.shape) < 0.5
            else:
                a = rng.integers(0, 8, t.shape)
            out[name] = np.asarray(a).astype(t.dtype.np_dtype)
        return out


WORKLOADS: dict[str, Workload] = {}


def register(w: Workload) -> Workload:
    WORKLOADS[w.name] = w
    return w


def get_workload(name: str) -> Workload:
    _load_all()
    if name not in WORKLOADS:
        raise BuildError(f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
    return WORKLOADS[name]


def _load_all() -> None:
    from . import attention, elementwise, embedding, mlp, moe, norms, qwen3, softmax  # noqa: F401  (registration)
    from .greedy import GREEDY  # noqa: F401  (registration: the issue 13 decode workloads)
    from .qwen3_decode import QWEN3_DECODE  # noqa: F401
    from .sink_attention import SINK_ATTENTION  # noqa: F401
