"""Emission: NKI IR -> a readable ``@nki.jit`` module (checked on the NumPy NKI simulator), and
NKI IR -> ``nki.compiler.kernel_builder`` calls (NISA MLIR; needs the Neuron SDK).

    source = emit_nki_source(kernel.nki, kernel.constants)   # or kernel.nki_source()
    outputs = simulate(source, {"x": x})                     # or nk.simulate(kernel, ...)
"""

from .kernel_builder import NeuronSdkMissing, build_kb, emit_kb
from .nki_source import emit_nki_source
from .simulate import load_module, simulate

__all__ = ["emit_nki_source", "simulate", "load_module", "build_kb", "emit_kb", "NeuronSdkMissing"]
