"""The gated MLP block's fp32 accumulator (mlp_block.py) is zeroed by GpSimd, which is idle
there, not VectorE, which adds the blocks' partial down projections into it. Engine on the NKI
IR; numerics against float64 NumPy on the NKI interpreter and the simulator."""

import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import MemsetOp

from .test_mlp_prologue import _inputs, _reference, back


def test_accumulator_zeroed_by_gpsimd_and_results_match_float64():
    """Four row tiles (two 1024-wide blocks in a loop, D 256): one memset of ``mlp_acc``, on
    GpSimd; results within bf16 tolerance of float64 (a few bf16 ulps of the largest value)."""
    args = _inputs(512, 256, 256, 2048, seed=7)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    zeros = [
        op
        for op in kern.nki.body.walk()
        if isinstance(op, MemsetOp) and op.access("dst").tensor.name_hint.startswith("mlp_acc")
    ]
    assert [op.attrs["engine"] for op in zeros] == ["gpsimd"]
    want = _reference(*args)
    feeds = dict(zip(g.input_names, args))
    for got in (kern.run(feeds)["y"], nk.simulate(kern, feeds)["y"]):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=0.03 * np.abs(want).max())
