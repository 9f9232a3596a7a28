"""The gated MLP block with few row tiles and blocks run unrolled (mlp_block._BlockEmitter.
straight_blocks): no loop over blocks, each block's weights in tiles of their own, and block
j+1's up projections on TensorE before block j's down projection. Order and counts on the NKI
IR; numerics against float64 NumPy on the NKI interpreter."""

import ml_dtypes
import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp, MatmulOp
from nkigen_lite.perf.dma_cost import dma_cost

from .test_mlp_prologue import _inputs, _reference, back

BF16 = ml_dtypes.bfloat16


def _src_root(op):
    v = op.access("src").tensor
    d = v.defining_op
    return d.operand(0) if d is not None and d.name == "nki.hbm_view" else v


def _down_and_up(kern):
    """Top-level positions of the up projections (reading an ``h_t`` window) and of the down
    projections (reading an ``act_t`` tile), in program order."""
    ups, downs = [], []
    for i, op in enumerate(kern.nki.body):
        if not isinstance(op, MatmulOp):
            continue
        name = op.access("stationary").tensor.name_hint or ""
        if name.startswith("h_t"):
            ups.append(i)
        elif name.startswith("act_t"):
            downs.append(i)
    return ups, downs


def test_qwen3_sized_back_half_at_seq_128_runs_its_blocks_unrolled_and_skewed():
    """Qwen3-0.6B sizes at seq 128 (one row tile, three 1024-wide blocks): no loop holds a
    matmul of the MLP, Wd is loaded by 3 top-level DMAs (one per block, into its own tile),
    and the second block's up projections are issued before the first block's down
    projection (8 K chunks x 2 PSUM banks x 2 up weights = 32 matmuls per block)."""
    args = [np.zeros(a.shape, BF16) for a in _inputs(128, 2048, 1024, 3072)]
    kern = nk.compile(nk.trace(back).trace(*args))
    w_dn = kern.nki.body.args[5]
    wd_loads = [op for op in kern.nki.body if isinstance(op, DmaCopyOp) and _src_root(op) is w_dn]
    assert len(wd_loads) == 3
    assert len({op.access("dst").tensor for op in wd_loads}) == 3
    for top in kern.nki.body:
        if isinstance(top, ForiLoopOp):
            for op in top.body.walk():
                if isinstance(op, MatmulOp):
                    assert not (op.access("stationary").tensor.name_hint or "").startswith(("h_t", "act_t"))
    ups, downs = _down_and_up(kern)
    assert len(ups) == 3 * 32 and len(downs) == 3 * 2 * 8
    assert ups[32] < downs[0]  # block 1's first up projection before block 0's down projection
    assert ups[64] < downs[16]


def test_unrolled_blocks_match_float64():
    """Two row tiles (the second partial: 200 rows), two 1024-wide blocks (intermediate 2048),
    D 256: unrolled, results within bf16 tolerance of float64 NumPy on the interpreter."""
    args = _inputs(200, 256, 256, 2048, seed=3)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    ups, downs = _down_and_up(kern)
    assert ups and downs  # the blocks are top-level code, not a loop

    want = _reference(*args)
    got = kern.run(dict(zip(g.input_names, args)))["y"].astype(np.float64)
    # bf16 output of unit-scale values (|y| up to ~6): a few bf16 ulps of the largest value
    np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * np.abs(want).max())


def test_many_row_tiles_keep_the_block_loop():
    """With more row tiles than a pair (seq 512) the blocks stay a loop."""
    args = [np.zeros(a.shape, BF16) for a in _inputs(512, 256, 256, 2048)]
    kern = nk.compile(nk.trace(back).trace(*args))
    ups, downs = _down_and_up(kern)
    assert not ups and not downs


def test_down_weight_rows_load_in_runs_of_a_block_per_partition():
    """Qwen3-0.6B sizes at seq 128: each block's Wd rows (1024 rows x 1024 bf16 columns) are
    read with each partition's 8 rows consecutive, one 16 KiB contiguous run per partition
    (DMA efficiency 1.0), not 8 runs of one 2 KiB row (0.85): 3 DMAs move all 6 MiB of Wd."""
    args = [np.zeros(a.shape, BF16) for a in _inputs(128, 2048, 1024, 3072)]
    kern = nk.compile(nk.trace(back).trace(*args))
    w_dn = kern.nki.body.args[5]
    wd_loads = [op for op in kern.nki.body if isinstance(op, DmaCopyOp) and _src_root(op) is w_dn]
    costs = [dma_cost(op, kern.target) for op in wd_loads]
    assert sum(c.bytes for c in costs) == 3072 * 1024 * 2
    assert [c.chunk_bytes for c in costs] == [8 * 1024 * 2] * 3
    assert all(c.efficiency == 1.0 for c in costs)


def test_down_weight_row_runs_match_float64_with_a_block_loop():
    """Wd in row runs inside the block loop (seq 512: four row tiles, two 1024-wide blocks,
    a loop over blocks): within bf16 tolerance of float64 NumPy on the interpreter."""
    args = _inputs(512, 256, 256, 2048, seed=5)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    w_dn = kern.nki.body.args[5]
    loads = [op for op in kern.nki.body.walk() if isinstance(op, DmaCopyOp) and _src_root(op) is w_dn]
    assert loads and all(dma_cost(op, kern.target).chunk_bytes == 8 * 256 * 2 for op in loads)
    want = _reference(*args)
    got = kern.run(dict(zip(g.input_names, args)))["y"].astype(np.float64)
    # bf16 output of unit-scale values: a few bf16 ulps of the largest value
    np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * np.abs(want).max())
