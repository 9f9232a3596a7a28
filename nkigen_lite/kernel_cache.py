"""KernelCache: one compiled Kernel per input shape/dtype configuration (the FrameworkKernel
model), shared by the JAX and PyTorch bindings (nkigen_lite/jax.py, nkigen_lite/torch.py).

A framework call hands over positional arrays; the cache turns their shapes and dtypes into a
key, compiles on the first call with that key and reuses the Kernel afterwards. What it wraps:

- a compiled ``nk.Kernel`` or a tensor ``nk.Graph``: one fixed configuration; a call with other
  shapes or dtypes is an error naming the input;
- an ``nk.trace`` function or a plain NumPy function (traced with ``nk.trace``): traced and
  compiled once per configuration, each positional argument one graph input.

Framework arrays never narrow: a 64-bit array is an error (trn2 has no 64-bit types), so the
kernel's types are exactly the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .compiler import Kernel
from .compiler import compile as nk_compile
from .ir.dtypes import get_dtype
from .ir.errors import BuildError, NkError
from .ir.graph import Graph
from .nki.target import TRN2, Target
from .tensor.trace import TracedFunction
from .tensor.types import TensorType

Spec = tuple[tuple[int, ...], str]  # (shape, NumPy dtype name) of one positional argument


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape and NumPy dtype of a kernel input or output."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


def input_specs(kernel: Kernel) -> list[TensorSpec]:
    """The kernel's graph inputs (constants excluded), in call order."""
    out = []
    for n in kernel.input_names:
        t = kernel.nki.input(n).type
        out.append(TensorSpec(n, tuple(t.shape), t.dtype.np_dtype))
    return out


def output_specs(kernel: Kernel) -> list[TensorSpec]:
    """The kernel's graph outputs in graph order (zero-size outputs included)."""
    out = []
    for n in kernel.output_names:
        t = kernel.empty_outputs[n] if n in kernel.empty_outputs else kernel.nki.outputs[n].type
        out.append(TensorSpec(n, tuple(t.shape), t.dtype.np_dtype))
    return out


class KernelCache:
    """Compiled kernels of one function or kernel, by input configuration (see module docstring).

    ``compiles`` counts compilations; ``kernels`` maps each configuration key to its Kernel.
    """

    def __init__(self, fn_or_kernel, *, who: str, target: Target = TRN2, knobs: dict | None = None):
        self.target = target
        self.knobs = knobs
        self.kernels: dict[tuple[Spec, ...], Kernel] = {}
        self.compiles = 0
        self._fixed: Kernel | None = None
        self._graph: Graph | None = None
        self._traced: TracedFunction | None = None
        if isinstance(fn_or_kernel, Kernel):
            self._fixed = fn_or_kernel
            self.name = fn_or_kernel.name
        elif isinstance(fn_or_kernel, Graph):
            self._graph = fn_or_kernel
            self.name = fn_or_kernel.name
        elif isinstance(fn_or_kernel, TracedFunction):
            self._traced = fn_or_kernel
            self.name = fn_or_kernel.graph_name
        elif callable(fn_or_kernel):
            self._traced = TracedFunction(fn_or_kernel)
            self.name = self._traced.graph_name
        else:
            raise BuildError(
                f"{who} takes a compiled nk.Kernel, an nk.Graph or a NumPy function, "
                f"got {type(fn_or_kernel).__name__}"
            )
        self.who = f"{who}({self.name})"

    def key(self, args_shape_dtype) -> tuple[Spec, ...]:
        """The configuration key of ``[(shape, dtype), ...]`` (dtype: anything NumPy names)."""
        key = []
        for i, (shape, dtype) in enumerate(args_shape_dtype):
            try:
                dt = get_dtype(np.dtype(dtype))
            except (BuildError, TypeError) as e:
                raise BuildError(f"{self.who}: argument {i}: {e}") from None
            key.append((tuple(int(d) for d in shape), dt.numpy_name))
        return tuple(key)

    def kernel(self, args_shape_dtype) -> Kernel:
        """The Kernel for arguments of these shapes and dtypes, compiled on first use."""
        key = self.key(args_shape_dtype)
        k = self.kernels.get(key)
        if k is None:
            k = self._build(key)
            self.kernels[key] = k
        return k

    def _build(self, key: tuple[Spec, ...]) -> Kernel:
        if self._fixed is not None:
            self._check_fixed(self._fixed, key)
            return self._fixed
        if self._graph is not None:
            k = self._compile(self._graph)
            self._check_fixed(k, key)
            return k
        examples = [TensorType(shape, dtype) for shape, dtype in key]
        try:
            graph = self._traced.trace(*examples)
        except NkError as e:
            raise type(e)(f"{self.who}: tracing for inputs {_fmt(key)}: {e}") from None
        if len(graph.input_names) != len(key):
            raise BuildError(
                f"{self.who}: the traced graph has inputs {graph.input_names} for "
                f"{len(key)} arguments; each positional argument must be one array"
            )
        return self._compile(graph)

    def _compile(self, graph: Graph) -> Kernel:
        self.compiles += 1
        return nk_compile(graph, target=self.target, knobs=self.knobs)

    def _check_fixed(self, k: Kernel, key: tuple[Spec, ...]) -> None:
        specs = input_specs(k)
        if len(specs) != len(key):
            raise BuildError(
                f"{self.who}: kernel takes {len(specs)} inputs "
                f"{[s.name for s in specs]}, got {len(key)} arguments"
            )
        for s, (shape, dtype) in zip(specs, key):
            if s.shape != shape or s.dtype != get_dtype(dtype).np_dtype:
                raise BuildError(
                    f"{self.who}: input {s.name!r} was compiled for "
                    f"{s.shape} {get_dtype(s.dtype).numpy_name}, got {shape} {dtype}; "
                    "pass a NumPy function to compile per shape"
                )

    def run(self, kernel: Kernel, arrays) -> list[np.ndarray]:
        """Run ``kernel`` on the NKI interpreter; outputs in graph order, in the declared dtypes."""
        specs = input_specs(kernel)
        inputs = {s.name: np.asarray(a).astype(s.dtype, copy=False) for s, a in zip(specs, arrays)}
        out = kernel.run(inputs)
        return [np.asarray(out[s.name], dtype=s.dtype).reshape(s.shape) for s in output_specs(kernel)]


def _fmt(key) -> str:
    return ", ".join(f"{shape} {dtype}" for shape, dtype in key)
