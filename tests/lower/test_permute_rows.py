"""Permuting copies with several destination rows per partition (permute_rows.py): ``x.T.copy()``
of a wide matrix loads blocks of ``128 m`` source rows (``m`` per partition) and stores runs of
``128 m`` destination elements, so both sides move runs of at least 2 KiB. Results are compared
bit for bit with NumPy (a copy is exact); DMA counts and descriptor sizes are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, TransposeOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost

RNG = np.random.default_rng(2048)


@pytest.mark.parametrize(
    "shape,perm,dtype,dmas",
    [
        ((1024, 1024), (1, 0), ml_dtypes.bfloat16, 2),  # m = 8, ca = 1024: one block (was 80 DMAs)
        ((512, 1024), (1, 0), np.float32, 2 * 2),  # m = 4, ca = 1024 (4 KiB loads), 2 column blocks
        ((2, 512, 512), (0, 2, 1), np.float32, 2 * 2),  # an outer loop over dim 0
    ],
    ids=["bf16", "f32", "outer-loop"],
)
def test_transposed_copy_runs(shape, perm, dtype, dmas):
    x = RNG.standard_normal(shape).astype(dtype)
    k = nk.compile(nk.trace(lambda a: a.transpose(perm).copy()).trace(x))
    want = np.ascontiguousarray(x.transpose(perm))
    for how, got in (("Kernel.run", k.run({"a": x})), ("nk.simulate", nk.simulate(k, {"a": x}))):
        assert np.array_equal(got["y"].view(np.uint8), want.view(np.uint8)), how
    assert any(isinstance(op, TransposeOp) for op in k.nki.walk())
    s = k.stats()
    assert s.dma_count == dmas
    assert s.dma_bytes == s.min_hbm_bytes
    for op in k.nki.walk():
        if isinstance(op, DmaCopyOp):
            assert dma_cost(op, TRN2).chunk_bytes >= 2048


def test_wide_bf16_counts():
    """x.T.copy() of 2048x4096 bf16 (the cliff_sweep row): blocks of 1024 rows x 1024 columns
    (16 KiB per partition), 8 loads and 8 stores of 2 KiB runs, 656 executed
    instructions (was 640 DMAs of 1 KiB / 256 B runs and 1,664 instructions)."""
    x = np.zeros((2048, 4096), ml_dtypes.bfloat16)
    k = nk.compile(nk.trace(lambda a: a.T.copy()).trace(x))
    s = k.stats()
    assert s.dma_count == 16
    assert s.instructions_dynamic <= 656
    chunks = sorted(dma_cost(op, TRN2).chunk_bytes for op in k.nki.walk() if isinstance(op, DmaCopyOp))
    assert chunks == [2048, 2048]  # the load and the store in the loop body
