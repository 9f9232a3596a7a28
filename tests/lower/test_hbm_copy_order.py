"""The dim order of a plain HBM -> HBM copy (hbm_copy_order.py): a heads split
``x.reshape(S, H, D).transpose(1, 0, 2).copy()`` is one DMA over all 16 DMA engines (the S dim
outermost), not over H / 8 of them. Results are compared bit for bit with NumPy (a copy is
exact); engines and descriptor runs are asserted from the DMA model."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost

RNG = np.random.default_rng(128)


@pytest.mark.parametrize(
    "s,h,d,dtype",
    [(256, 8, 64, ml_dtypes.bfloat16), (128, 4, 32, np.float32)],
    ids=["bf16", "f32"],
)
def test_heads_split_uses_all_engines(s, h, d, dtype):
    x = RNG.standard_normal((s, h * d)).astype(dtype)
    k = nk.compile(nk.trace(lambda a: a.reshape(s, h, d).transpose(1, 0, 2).copy()).trace(x))
    want = np.ascontiguousarray(x.reshape(s, h, d).transpose(1, 0, 2))
    for how, got in (("Kernel.run", k.run({"a": x})), ("nk.simulate", nk.simulate(k, {"a": x}))):
        assert np.array_equal(got["y"].view(np.uint8), want.view(np.uint8)), how
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    assert len(dmas) == 1
    c = dma_cost(dmas[0], TRN2)
    assert c.engines == 16  # was h / 8 (S was not the outer dim)
    assert c.chunk_bytes == d * np.dtype(dtype).itemsize
    s_ = k.stats()
    assert s_.hbm_bytes == s_.min_hbm_bytes


def test_order_kept_when_no_better():
    """A copy whose written order is already the cheapest keeps it (a reversal-free reshape)."""
    x = RNG.standard_normal((4, 8, 128)).astype(np.float32)
    k = nk.compile(nk.trace(lambda a: a.transpose(1, 0, 2).reshape(8, 512)).trace(x))
    assert np.array_equal(k.run({"a": x})["y"], x.transpose(1, 0, 2).reshape(8, 512))
