"""x.max(0) / x.min(0) of a matrix (transforms/lower/leading_column_extremes.py): row pieces
transposed on TensorE, maxima over PSUM banks by VectorE. Results equal float64 NumPy's exactly
(a max or min is one of its f32 elements; NaN propagates, -inf kept) through nk.run, Kernel.run
and nk.simulate; counts asserted at the model size (compile only)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp


def _graph(shape, kind, keepdims=False):
    return nk.trace(lambda x: getattr(x, kind)(0, keepdims=keepdims)).trace(nk.TensorType(shape, nk.float32))


def _names(k) -> list[str]:
    return [op.name for op in k.nki.walk()]


@pytest.mark.parametrize(
    "shape,kind,keepdims",
    [
        ((384, 3072), "max", False),
        ((256, 4096), "min", True),
        ((640, 2048), "max", True),
        ((128, 1024), "min", False),
    ],
)
def test_column_extremes_against_float64(shape, kind, keepdims):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    x[5, 7] = np.nan
    x[100, 9] = -np.inf
    x[17, 300] = np.inf
    g = _graph(shape, kind, keepdims)
    want = getattr(x.astype(np.float64), kind)(0, keepdims=keepdims).astype(np.float32)
    k = nk.compile(g)
    for got in (nk.run(g, {"x": x})["y"], k.run({"x": x})["y"], nk.simulate(k, {"x": x})["y"]):
        np.testing.assert_array_equal(got, want)
    n, d = shape
    assert _names(k).count("nki.nc_transpose") == n * d // 128 // 128 + 1  # + the store's
    assert "nki.tensor_tensor" not in _names(k)


def test_model_size_is_dma_bound():
    """2048 x 4096 f32 max(0, keepdims): 18 loads, 512 transposes of the data, VectorE reduces
    over PSUM banks (before: a VectorE max of every row tile into an SBUF accumulator, 182.7 us =
    1.96x the roofline; now 104.4 us, DMA-bound)."""
    k = nk.compile(_graph((2048, 4096), "max", True))
    names = _names(k)
    assert names.count("nki.nc_transpose") == 512 + 1
    assert "nki.tensor_tensor" not in names
    assert sum(isinstance(op, DmaCopyOp) for op in k.nki.walk()) == 18 + 1
    e = k.estimate()
    assert e.critical_engine == "dma" and e.by_engine_ns["vector"] < 0.8 * e.by_engine_ns["dma"]
