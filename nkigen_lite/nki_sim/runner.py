"""simulate(): run an emitted NKI module (source text, module or kernel) on named NumPy inputs.

Module contract: exactly one ``@nki.jit`` kernel; a module-level ``OUTPUT_NAMES`` tuple naming
its outputs in return order (one output: the kernel returns one tensor; several: a tuple);
optionally ``INPUT_SPECS = {"x": ((256, 512), "float32"), ...}`` to check inputs before running,
and ``ALIASES = {"cache_out": "cache"}`` naming the arguments the kernel updates in place and
returns (the caller's arrays are not modified); optionally ``LNC = 2`` to launch the kernel on
the two cores of a logical NeuronCore (``kernel[2](...)``, grid.py).
"""

from __future__ import annotations

import dataclasses
import inspect
import types

import numpy as np

from ..ir import dtypes as D
from ..ir.errors import BuildError
from .errors import NkiSimError
from .install import installed
from .jit import JitKernel, run_kernel
from .runtime import SimStats


@dataclasses.dataclass(frozen=True)
class SimResult:
    """Outputs of a simulated kernel call by name, with the call's statistics."""

    outputs: dict[str, np.ndarray]
    stats: SimStats


def simulate(kernel_source, inputs: dict[str, np.ndarray], output_names=None) -> dict[str, np.ndarray]:
    """Run source text / a module / a kernel function on inputs; return outputs by name."""
    return simulate_detailed(kernel_source, inputs, output_names).outputs


def simulate_detailed(kernel_source, inputs: dict[str, np.ndarray], output_names=None) -> SimResult:
    """Like simulate(), also returning the run's SimStats."""
    with installed():
        namespace = _namespace(kernel_source)
        kernel = _find_kernel(kernel_source, namespace)
        names = _output_names(output_names, namespace)
        _check_inputs(kernel, inputs, namespace.get("INPUT_SPECS"))
        writable = tuple((namespace.get("ALIASES") or {}).values())  # inputs updated in place
        lnc = namespace.get("LNC", 1)  # the module's launch: kernel[LNC](...) when > 1
        grid = lnc if lnc != 1 else None
        result, stats = run_kernel(kernel.func, (), dict(inputs), writable, grid=grid)
    values = result if isinstance(result, tuple) else (result,)
    if len(values) != len(names):
        raise NkiSimError(
            f"kernel {kernel.name} returned {len(values)} output(s) but OUTPUT_NAMES lists "
            f"{len(names)}: {names}"
        )
    return SimResult(dict(zip(names, values)), stats)


def _namespace(src) -> dict:
    if isinstance(src, str):
        namespace = {"__name__": "nki_sim_kernel"}
        code = compile(src, "<emitted nki kernel>", "exec")
        exec(code, namespace)  # our own emitted module: executing it is the point
        return namespace
    if isinstance(src, types.ModuleType):
        return vars(src)
    if isinstance(src, JitKernel):
        return src.func.__globals__
    if inspect.isfunction(src):
        return src.__globals__
    raise NkiSimError(f"simulate: expected source text, a module or a kernel, got {type(src).__name__}")


def _find_kernel(src, namespace: dict) -> JitKernel:
    if isinstance(src, JitKernel):
        return src
    if inspect.isfunction(src):
        return JitKernel(src)
    kernels: dict[str, JitKernel] = {}
    for name, v in namespace.items():
        if isinstance(v, JitKernel) and all(v is not k for k in kernels.values()):
            kernels[name] = v
    if len(kernels) != 1:
        found = ", ".join(sorted(kernels)) or "none"
        raise NkiSimError(f"simulate: the module must define exactly one @nki.jit kernel; found {found}")
    return next(iter(kernels.values()))


def _output_names(given, namespace: dict) -> tuple[str, ...]:
    names = given if given is not None else namespace.get("OUTPUT_NAMES")
    if names is None:
        raise NkiSimError("simulate: the module defines no OUTPUT_NAMES tuple (or pass output_names=)")
    if isinstance(names, str) or not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        raise NkiSimError(f"simulate: OUTPUT_NAMES must be a tuple of distinct str, got {names!r}")
    return tuple(names)


def _check_inputs(kernel: JitKernel, inputs: dict, specs) -> None:
    if not isinstance(inputs, dict):
        raise NkiSimError(f"simulate: inputs must be a dict name -> array, got {type(inputs).__name__}")
    params = inspect.signature(kernel.func).parameters
    required = [n for n, p in params.items() if p.default is inspect.Parameter.empty]
    missing = [n for n in required if n not in inputs]
    extra = [n for n in inputs if n not in params]
    if missing or extra:
        raise NkiSimError(
            f"simulate: kernel {kernel.name}{tuple(params)} got inputs {sorted(inputs)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unexpected {extra}" if extra else "")
        )
    for name, (shape, dtype) in (specs or {}).items():
        value = inputs.get(name)
        if not isinstance(value, np.ndarray):
            raise NkiSimError(f"simulate: input {name!r} must be a NumPy array, got {type(value).__name__}")
        try:
            want = D.get_dtype(dtype)
        except BuildError as e:
            raise NkiSimError(f"simulate: INPUT_SPECS[{name!r}]: {e}") from None
        if tuple(value.shape) != tuple(shape) or value.dtype != want.np_dtype:
            raise NkiSimError(
                f"simulate: input {name!r} is {value.dtype}{list(value.shape)} but the kernel expects "
                f"{want.numpy_name}{list(shape)}"
            )
