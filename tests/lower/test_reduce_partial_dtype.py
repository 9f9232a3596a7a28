"""The partial of an accumulating bf16 max (transforms/lower/reduce_acc.py ``_partial_dtype``):
each row tile's ``tensor_reduce`` writes bf16, the dtype VectorE reduces at N/2 cycles (bf16 in
and out, add or max); other kinds and dtypes keep the fp32 partial. Results against float64
NumPy through nk.run, Kernel.run and nk.simulate (tolerance: the output dtype's; a max or min of
bf16 data is one of its elements, exact)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.dtypes import bfloat16, float32
from nkigen_lite.nki.ops import TensorReduceOp
from nkigen_lite.nki.types import MemorySpace

from .scale_helpers import check_three_ways
from .test_partition_reduce import reduce_graph, reference

RNG = np.random.default_rng(1205)


def _partials(k: nk.Kernel) -> list[str]:
    """dtypes of the row tiles' partial reductions (the reduces of loaded data; the finishing
    reduce reads a transpose in PSUM)."""
    return [
        op.access("dst").tensor.type.dtype.name
        for op in k.nki.walk()
        if isinstance(op, TensorReduceOp) and op.access("data").tensor.type.space is MemorySpace.SBUF
    ]


@pytest.mark.parametrize("shape", [(300, 200), (256, 1000)])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_full_max_and_min_of_bf16(shape, kind):
    g = reduce_graph(shape, bfloat16, kind, None)
    x = (RNG.standard_normal(shape) * 8).astype(bfloat16.np_dtype)
    k, _ = check_three_ways(g, {"x": x}, {"y": reference(kind, x, None)})
    want = "bf16" if kind == "max" else "f32"  # min has no fast rate: unchanged
    assert set(_partials(k)) == {want}


def test_f32_max_and_bf16_sum_keep_fp32_partials():
    for dtype, kind in ((float32, "max"), (bfloat16, "sum")):
        k = nk.compile(reduce_graph((256, 512), dtype, kind, None))
        assert set(_partials(k)) == {"f32"}, (dtype, kind)


def test_bf16_full_max_at_model_size_is_dma_bound():
    """x.max() of 2048 x 4096 bf16 (compile only): 16 bf16 partials, VectorE 35.4 us under the
    DMA's 47.9 (before: fp32 partials at N cycles, VectorE-bound, 79.1 us = 1.70x the roofline)."""
    k = nk.compile(nk.trace(lambda x: x.max()).trace(nk.TensorType((2048, 4096), bfloat16)))
    assert _partials(k) == ["bf16"]  # one loop body
    e = k.estimate()
    assert e.critical_engine == "dma" and e.by_engine_ns["vector"] < 0.8 * e.by_engine_ns["dma"]
