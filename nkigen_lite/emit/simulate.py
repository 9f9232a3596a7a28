"""``nk.simulate``: run an emitted NKI module (or a compiled Kernel's) on the NumPy NKI simulator.

Inputs are keyed by the graph's input names (the module's ``INPUT_NAMES``), which may differ
from the sanitised kernel parameter names; the module's ``CONSTANTS`` are passed for the
constant parameters. Outputs come back keyed by ``OUTPUT_NAMES``.
"""

from __future__ import annotations

import types

import numpy as np

from ..ir.errors import BuildError, IndexOutOfRange
from ..nki_sim import installed
from ..nki_sim import simulate as sim_run


def load_module(source: str, name: str = "nki_kernel") -> types.ModuleType:
    """Execute emitted module text with the simulator installed as ``nki``; return the module."""
    if not isinstance(source, str):
        raise BuildError(f"load_module takes module source text, got {type(source).__name__}")
    module = types.ModuleType(name)
    with installed():
        exec(compile(source, f"<{name}>", "exec"), vars(module))  # our own emitted code
    return module


def _is_kernel(x) -> bool:
    """A compiled Kernel (anything with an NKI graph and ``nki_source()``); emit/ does not
    import the compiler, which sits above it."""
    return callable(getattr(x, "nki_source", None)) and hasattr(getattr(x, "nki", None), "outputs")


def simulate(source_or_kernel, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run emitted NKI source text, or a ``Kernel`` (emitted on the fly), on the simulator.

    ``inputs`` maps graph input names to arrays; constants are supplied from the module.
    Returns ``{output name: array}`` (for a Kernel in the graph's output shapes: a 0-d output
    is a 1-element 1-D tensor inside the kernel; empty outputs, which the kernel does not
    compute, are included as ``Kernel.run`` includes them, and empty inputs it does not read
    are accepted).
    """
    shapes = None
    kernel = None
    if _is_kernel(source_or_kernel):
        kernel = source_or_kernel
        given = inputs
        inputs = kernel.kernel_inputs(inputs)  # the same check as Kernel.run / nk.run
        if not kernel.nki.outputs:  # every output is empty: there is nothing to run
            return kernel.with_empty_outputs({})
        source = kernel.nki_source()
        shapes = {n: v.type.shape for n, v in source_or_kernel.nki.outputs.items()}
    elif isinstance(source_or_kernel, str):
        source = source_or_kernel
    else:
        raise BuildError(
            f"simulate takes emitted NKI source text or a Kernel, got {type(source_or_kernel).__name__}"
        )
    module = load_module(source)
    names = getattr(module, "INPUT_NAMES", None)
    specs = getattr(module, "INPUT_SPECS", None)
    if names is None or specs is None:
        raise BuildError(
            "simulate: the module defines no INPUT_NAMES / INPUT_SPECS (not emitted by "
            "nkigen_lite?); use nkigen_lite.nki_sim.simulate with parameter names"
        )
    params = list(specs)
    if kernel is None:
        from types import SimpleNamespace

        from ..ir.dtypes import get_dtype
        from ..ir.interpreter import check_signature

        types = [SimpleNamespace(shape=tuple(specs[p][0]), dtype=get_dtype(specs[p][1])) for p in params]
        # a 0-d graph input is a 1-element 1-D kernel parameter: accept either shape
        inputs = dict(inputs) if isinstance(inputs, dict) else inputs
        if isinstance(inputs, dict):
            for n, t in zip(names, types):
                a = inputs.get(n)
                if isinstance(a, np.ndarray) and a.ndim == 0 and t.shape == (1,):
                    inputs[n] = a.reshape(1)
        from ..nki_sim.jit import JitKernel

        kname = next((k for k, v in vars(module).items() if isinstance(v, JitKernel)), "kernel")
        inputs = check_signature(kname, names, types, inputs)
    args = {}
    for param, n in zip(params, names):
        a = inputs[n]
        # a 0-d graph tensor is a 1-element 1-D tensor in the kernel
        args[param] = a.reshape(specs[param][0]) if isinstance(a, np.ndarray) and a.ndim == 0 else a
    args.update(getattr(module, "CONSTANTS", {}))
    try:
        outputs = sim_run(module, args)
    except IndexOutOfRange as e:  # an index the kernel computed: the tensor op's terms
        if kernel is None:
            raise
        raise kernel.index_error(given, e) from e
    if shapes:
        outputs = {n: a.reshape(shapes[n]) for n, a in outputs.items()}
    return kernel.with_empty_outputs(outputs) if kernel is not None else outputs
