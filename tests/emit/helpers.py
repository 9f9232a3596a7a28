"""Three-way agreement: emitted module on the NumPy NKI simulator ≡ Kernel.run (NKI interpreter)
≡ nk.run (tensor interpreter), plus shared tolerance rules for the emission tests.

Tolerance (stated once, used by every comparison here): per output dtype from
``nkigen_lite.testing.tolerance`` (f32 1e-5, bf16 1e-2, integers exact), with the absolute
part scaled by ``max(1, max|reference|)``: matmul and reduction outputs carry rounding error
proportional to the magnitude of the terms summed, not of each result element.
"""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.testing.tolerance import assert_close, tolerance_for


def close(got, ref, dtype, what: str, rtol: float | None = None) -> None:
    """assert_close with the norm-scaled absolute tolerance described in the module docstring
    (``rtol``: a wider tolerance a test states for itself, used for both parts)."""
    rtol, atol = tolerance_for(dtype) if rtol is None else (rtol, rtol)
    ref64 = np.asarray(ref).astype(np.float64)
    finite = ref64[np.isfinite(ref64)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    assert_close(got, ref, dtype, what=what, rtol=rtol, atol=atol * scale)


def three_way(graph: nk.Graph, inputs: dict, kernel: nk.Kernel | None = None) -> nk.Kernel:
    """Compile ``graph`` and check simulator ≡ NKI interpreter ≡ tensor interpreter on ``inputs``."""
    k = kernel or nk.compile(graph)
    simulated = nk.simulate(k, inputs)
    interpreted = k.run(inputs)
    reference = nk.run(graph, inputs)
    assert set(simulated) == set(interpreted) == set(reference) == set(graph.outputs)
    for name, v in graph.outputs.items():
        dt = v.type.dtype
        where = f"{graph.name}.{name}"
        assert simulated[name].shape == interpreted[name].shape == tuple(v.type.shape), where
        close(simulated[name], interpreted[name], dt, f"{where}: simulator vs NKI interpreter")
        close(simulated[name], reference[name], dt, f"{where}: simulator vs nk.run")
        close(interpreted[name], reference[name], dt, f"{where}: NKI interpreter vs nk.run")
    return k
