"""An output whose value was copied into a scratch buffer of its own (a reshape that needs a
copy: ``np.repeat(k, 4, axis=0)``, the GQA repeat of the KV heads) is that buffer, renamed: no
second HBM -> HBM copy into a separate output (driver.py). Compared bit for bit with NumPy (a
copy is exact); DMA counts and bytes are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp

BF16 = ml_dtypes.bfloat16


@pytest.mark.parametrize(
    "fn, shape, dtype",
    [
        (lambda k: np.repeat(k, 4, axis=0), (8, 64, 32), BF16),
        (lambda k: np.repeat(k, 3, axis=1), (5, 7, 16), np.float32),
        (lambda x: x.T.reshape(-1), (24, 40), np.float32),
    ],
    ids=["repeat-heads-bf16", "repeat-middle-f32", "transposed-flatten-f32"],
)
def test_copied_view_outputs_match_numpy(fn, shape, dtype):
    x = np.random.default_rng(8).standard_normal(shape).astype(dtype)
    k = nk.compile(nk.trace(fn).trace(x))
    want = np.ascontiguousarray(fn(x))
    (name,) = k.input_names
    for how, out in (("Kernel.run", k.run({name: x})), ("nk.simulate", nk.simulate(k, {name: x}))):
        (got,) = out.values()
        assert got.shape == want.shape and got.dtype == want.dtype, how
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), how


def test_repeat_output_is_one_copy():
    """np.repeat(k, 4, axis=0) of 8x2048x128 bf16: written straight into the output, k read once
    and the output written once (broadcast_copy.py: one load per head, one store per repeat;
    20 MiB of HBM traffic); was one HBM -> HBM DMA reading k 4 times (32 MiB), and before that
    two DMAs and 64 MiB through a scratch buffer."""
    k = nk.compile(nk.trace(lambda k: np.repeat(k, 4, axis=0)).trace(np.zeros((8, 2048, 128), BF16)))
    out_bytes = 32 * 2048 * 128 * 2
    assert sum(isinstance(op, DmaCopyOp) for op in k.nki.walk()) == 2  # a load and a store
    s = k.stats()
    assert s.dma_bytes == out_bytes // 4 + out_bytes and s.hbm_bytes == out_bytes // 4 + out_bytes
