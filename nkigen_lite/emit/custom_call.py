"""``Kernel.custom_call()``: a framework-neutral, JSON-serialisable description of a kernel call.

The analogue of NKI's ``FrameworkKernel.dump_config``: what a framework needs to turn a call of
the compiled kernel into an XLA custom call (``AwsNeuronCustomNativeKernel``) or any other
foreign-function call. Keys (schema ``nkigen_lite.custom_call/1``, documented in
docs/extending.md):

- ``target``: the custom-call target name; ``kernel``: the ``@nki.jit`` function's name in
  ``source``; ``name``: the tensor graph's name; ``platform``: the target chip.
- ``operands``: the kernel's parameters in call order — the graph inputs, then the dense
  constants the compiler made into inputs (``"constant": true``; their values are the module's
  ``CONSTANTS``). ``results``: the tensors the kernel returns, in order. Each entry has
  ``name`` (graph name), ``parameter`` (identifier in ``source``), ``shape`` (the graph's),
  ``kernel_shape`` (inside NKI, where a 0-d tensor is ``[1]``), ``dtype`` (NumPy name),
  ``layout`` (minor-to-major dimension order, XLA's convention: HBM tensors are row-major).
- ``empty_results``: outputs with a zero-size dimension, which the kernel does not produce (the
  caller makes them); ``outputs``: every graph output name in graph order.
- ``aliases``: ``[{"result": i, "operand": j}]`` for results written in place of an operand
  (``Kernel.io.aliases``: the kernel updates operand j and returns it as result i); ``io``:
  ``Kernel.io.to_dict()`` (inputs, outputs and aliases under the graph's names); ``grid``: the
  SPMD launch grid (``[]``: one program instance; ``[2]`` for an LNC=2 launch);
  ``has_collectives``: whether the kernel calls ``nki.collectives``.
- ``source``: the emitted ``@nki.jit`` module text; ``source_sha256``: its SHA-256.

The description holds only strings, ints, bools and lists, so ``dumps`` gives the same bytes
for the same graph in every run.
"""

from __future__ import annotations

import hashlib
import json

from ..nki.ops import CollectiveOp, lnc_of
from .accesses import kernel_shape
from .names import kernel_names

SCHEMA = "nkigen_lite.custom_call/1"
TARGET = "AwsNeuronCustomNativeKernel"


def _layout(shape) -> list[int]:
    """Row-major as XLA writes it: dimensions from minor (last) to major (first)."""
    return list(range(len(shape) - 1, -1, -1))


def _tensor(name: str, parameter: str, t) -> dict:
    return {
        "name": name,
        "parameter": parameter,
        "shape": list(t.shape),
        "kernel_shape": list(kernel_shape(t)),
        "dtype": t.dtype.numpy_name,
        "layout": _layout(kernel_shape(t)),
    }


def describe(kernel) -> dict:
    """The custom-call description of a compiled ``Kernel`` (see the module docstring)."""
    g = kernel.nki
    func, names = kernel_names(g)
    operands = []
    for name, v in zip(g.input_names, g.inputs):
        entry = _tensor(name, names[v], v.type)
        entry["constant"] = name in kernel.constants
        operands.append(entry)
    results = [_tensor(name, names[v], v.type) for name, v in g.outputs.items()]
    empty = [
        {"name": n, "shape": list(t.shape), "dtype": t.dtype.numpy_name}
        for n, t in kernel.empty_outputs.items()
    ]
    source = kernel.nki_source()
    return {
        "schema": SCHEMA,
        "target": TARGET,
        "kernel": func,
        "name": kernel.name,
        "platform": kernel.target.name,
        "operands": operands,
        "results": results,
        "empty_results": empty,
        "outputs": list(kernel.output_names),
        "aliases": _aliases(g),
        "io": kernel.io.to_dict() if kernel.io is not None else None,
        "grid": [lnc_of(g)] if lnc_of(g) > 1 else [],
        "has_collectives": any(isinstance(op, CollectiveOp) for op in g.body),
        "source": source,
        "source_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
    }


def _aliases(g) -> list[dict]:
    outs, ins = list(g.outputs), list(g.input_names)
    return [{"result": outs.index(o), "operand": ins.index(i)} for o, i in g.aliases.items()]


def dumps(description: dict) -> str:
    """Canonical JSON text of a description: sorted keys, ASCII, fixed separators."""
    return json.dumps(description, sort_keys=True, ensure_ascii=True, indent=1, separators=(",", ": "))
