"""The traced decode KV-cache write ``cache[:, pos] = k`` (the qwen3 / gpt-oss caches (1, S,
H, D)) scatters k's rows straight into the cache buffer. The trace moves the unit batch dim
behind the positions and back with transposes; those only move extent-1 dims, so the scatter
is still an in-place update (transforms/lower/inplace.py) and its operand the cache's own
elements (HbmHome.same_elements). Before, the 1 MiB cache was copied to scratch and back
(20x the roofline). Results are compared bit for bit with NumPy (a write of existing bytes is
exact); DMA bytes are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk

BF16 = ml_dtypes.bfloat16


def kv_write(cache, k, pos):
    cache[:, pos] = k
    return cache


@pytest.mark.parametrize("shape, dtype", [((1, 4096, 1, 128), BF16), ((1, 512, 2, 64), np.float32)])
def test_traced_kv_write_scatters_in_place(shape, dtype):
    _, s, h, d = shape
    rng = np.random.default_rng(17)
    cache = rng.standard_normal(shape).astype(dtype)
    k = rng.standard_normal((1, 1, h, d)).astype(dtype)
    kern = nk.compile(nk.trace(kv_write).trace(cache, k, np.zeros((1,), np.int32)))
    assert kern.nki.outputs["y"] is kern.nki.input("cache")
    assert kern.stats().dma_bytes < 2 * k.nbytes + 512  # k loaded and scattered, plus the id
    for p in (0, 7, s - 1, -1):
        ins = {"cache": cache, "k": k, "pos": np.array([p], np.int32)}
        ref = cache.copy()
        ref[:, p] = k[:, 0]
        for how, out in (("Kernel.run", kern.run(ins)), ("nk.simulate", nk.simulate(kern, ins))):
            (got,) = out.values()
            assert np.array_equal(got.view(np.uint8), ref.view(np.uint8)), (how, p)
