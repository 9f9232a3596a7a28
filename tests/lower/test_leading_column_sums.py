"""x.sum(0) of a matrix too large for the spread lowering (transforms/lower/leading_column_sums.py):
row pieces in rotating buffers, every 128-column slice summed over the partitions by a
ones-column matmul into one PSUM accumulator. Results against float64 NumPy through nk.run,
Kernel.run and nk.simulate (f32 tolerance times 4: sums of up to 384 terms in another order);
counts asserted at the model size (compile only)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.transforms.lower.leading_column_sums import row_pieces

from .scale_helpers import check_three_ways


def _graph(shape, keepdims=False):
    return nk.trace(lambda x: x.sum(0, keepdims=keepdims)).trace(nk.TensorType(shape, nk.float32))


def _names(k) -> list[str]:
    return [op.name for op in k.nki.walk()]


@pytest.mark.parametrize("shape", [(384, 3072), (256, 4096), (128, 8192)])
def test_column_sums_against_float64(shape):
    """Shapes the spread lowering does not take (more than 2,048 columns)."""
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    g = _graph(shape)
    k, _ = check_three_ways(g, {"x": x}, {"y": x.astype(np.float64).sum(0)}, scale=4.0)
    n, d = shape
    assert _names(k).count("nki.nc_matmul") == n * d // 128 // 128
    assert "nki.tensor_tensor" not in _names(k)


def test_keepdims_and_a_nan_stays_in_its_column():
    x = np.random.default_rng(7).standard_normal((256, 4096)).astype(np.float32)
    x[3, 5] = np.nan
    k = nk.compile(_graph((256, 4096), keepdims=True))
    for got in (k.run({"x": x})["y"], nk.simulate(k, {"x": x})["y"]):
        assert got.shape == (1, 4096)
        assert np.isnan(got[0, 5]) and np.isfinite(np.delete(got[0], 5)).all()


def test_row_pieces():
    assert row_pieces(16, 1024, False) == [4, 4, 4, 4]
    assert row_pieces(16, 1024, True) == [4, 4, 4, 2, 1, 1]
    assert row_pieces(3, 1024, True) == [2, 1]
    assert row_pieces(2, 256, True) == [1, 1]


def test_model_size_streams_and_is_dma_bound():
    """2048 x 4096 f32: 18 loads of at most 2 MiB (4 column blocks of 1,024, rows in pieces of 4,
    the last block's 4, 4, 4, 2, 1, 1), one store, 512 matmuls,
    no VectorE pass over the data (before: a VectorE add per row tile, 156.9 us = 1.68x the
    roofline; now 100.9 us, DMA-bound)."""
    k = nk.compile(_graph((2048, 4096)))
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    names = _names(k)
    assert names.count("nki.nc_matmul") == 512
    assert "nki.tensor_tensor" not in names
    e = k.estimate()
    assert e.critical_engine == "dma" and e.by_engine_ns["tensor"] < 0.7 * e.by_engine_ns["dma"]
    assert k.stats().hbm_traffic_ratio <= 1.0001
    assert len(dmas) == 18 + 1 and max(op.access("dst").free_size for op in dmas) == 4 * 1024
