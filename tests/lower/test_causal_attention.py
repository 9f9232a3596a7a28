"""Causal attention in a decoder layer's 16-bit form (canonical/causal_attention.py,
lower/causal_attention.py): only the diagonal key blocks are masked, blocks above the diagonal
are never computed, K and V are read once, the mask is one tile for the kernel. Counts are
asserted on the NKI IR (trip counts included); numerics against float64 NumPy on the NKI
interpreter and the simulator."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.nki.ops import (
    ActivationOp,
    AffineSelectOp,
    DmaCopyOp,
    ForiLoopOp,
    HbmViewOp,
    MatmulOp,
    TensorTensorOp,
    TransposeOp,
)
from nkigen_lite.testing import assert_close

from .test_view_chains import layer_attention, layer_attention_reference, layer_inputs

BF16 = ml_dtypes.bfloat16
LOC = "tensor.causal_attention"


def _walk(block, mult=1):
    for op in block:
        if isinstance(op, ForiLoopOp):
            yield from _walk(op.body, mult * op.trip_count)
        else:
            yield op, mult


def _attention_ops(kern, cls):
    """(op, executions) of the attention kernel's instructions of class ``cls``."""
    return [(op, m) for op, m in _walk(kern.nki.body) if isinstance(op, cls) and LOC in str(op.loc)]


def _count(kern, cls) -> int:
    return sum(m for _, m in _attention_ops(kern, cls))


def _bytes_read(kern, name: str) -> int:
    g = kern.nki
    root_of = dict(zip(g.inputs, g.input_names))
    total = 0
    for op, m in _walk(g.body):
        if isinstance(op, DmaCopyOp):
            src = op.access("src")
            t = src.tensor
            t = t.defining_op.operand(0) if isinstance(t.defining_op, HbmViewOp) else t
            if root_of.get(t) == name:
                total += m * int(np.prod([d.size for d in src.dims])) * src.dtype.itemsize
    return total


@pytest.mark.parametrize(
    "seq, heads, kv, hd",
    [
        (256, 4, 2, 64),
        (200, 4, 2, 64),
        (384, 2, 1, 128),
        (300, 3, 3, 32),
        (384, 32, 16, 32),
        (128, 4, 2, 128),
    ],
    ids=["s256-gqa", "s200-partial-tile", "s384-d128", "s300-mha", "s384-kv-loop", "s128-one-tile"],
)
def test_layer_attention_matches_float64(seq, heads, kv, hd):
    """Interpreter and simulator against float64 NumPy (bf16 output tolerance), sequences that
    are and are not multiples of 128, grouped and multi-head; the last case has more than
    MAX_UNROLLED_UNITS units, so its KV heads run in a loop (the others straight-line)."""
    args = layer_inputs(seq, heads, kv, hd, 96, seed=seq)
    kern = nk.compile(layer_attention, *args)
    assert _count(kern, MatmulOp) > 0, "the causal_attention lowering was not used"
    ref = layer_attention_reference(*args)
    feeds = dict(zip(("q", "k", "v", "w_o"), args))
    assert_close(kern.run(feeds)["y"], ref, nk.bfloat16, what="causal attention, interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, nk.bfloat16, what="causal attention, simulator")


def test_blocks_above_the_diagonal_are_skipped_and_only_diagonal_blocks_masked():
    """Qwen3-0.6B attention at seq 512 (16 / 8 heads, head dim 128, 4 query tiles): query tile
    t reads key chunks 0..t only, so P V runs 16·(1+2+3+4) = 160 chunk products instead of 256,
    and exp covers 160·128 key columns per row instead of 256·128; the mask is built once and
    added to the 128 x 128 diagonal block of each (head, tile) only."""
    args = layer_inputs(512, 16, 8, 128, 1024)
    kern = nk.compile(layer_attention, *args)
    tiles, chunk_products = 4, 16 * (1 + 2 + 3 + 4)
    matmuls = _count(kern, MatmulOp)
    score_matmuls = 16 * tiles  # at most 512 keys: one PSUM bank per (head, tile)
    assert matmuls == score_matmuls + chunk_products
    transposes = _count(kern, TransposeOp)
    assert transposes == 8 * 4 + 16 * 4 + chunk_products  # Kᵀ, Qᵀ, Pᵀ per chunk
    exp_cols = sum(
        m * op.access("dst").free_size
        for op, m in _attention_ops(kern, ActivationOp)
        if op.attrs["op"] == "exp"
    )
    assert exp_cols == chunk_products * 128
    assert _count(kern, AffineSelectOp) == 1
    adds = _attention_ops(kern, TensorTensorOp)
    assert sum(m for _, m in adds) == 16 * tiles
    assert all(op.access("dst").free_size == 128 for op, _ in adds)


def test_k_and_v_read_once_and_no_hbm_copies():
    """K and V of every KV head cross HBM once; the output is written in the (s, h·d) layout."""
    args = layer_inputs(512, 16, 8, 128, 1024)
    kern = nk.compile(layer_attention, *args)
    for name, a in zip(("q", "k", "v"), args):
        assert _bytes_read(kern, name) == a.nbytes, name
    h2h = [
        op
        for op, _ in _walk(kern.nki.body)
        if isinstance(op, DmaCopyOp)
        and op.access("src").space.name == "HBM"
        and op.access("dst").space.name == "HBM"
    ]
    assert not h2h


def test_qwen3_layer_attention_at_seq_2048_skips_half_the_blocks():
    """The layer's attention at seq 2048 (compile only): 16 tiles, 136 of 256 key chunks."""
    args = layer_inputs(2048, 16, 8, 128, 1024)
    kern = nk.compile(layer_attention, *args)
    pv = sum(
        m
        for op, m in _attention_ops(kern, MatmulOp)
        if op.access("moving").free_size == 128
        and op.access("stationary").tensor.name_hint.startswith("probs_t")
    )
    assert pv == 16 * 136


def test_unsupported_operands_are_a_clear_error():
    """The op built by hand with a mask too weak to skip blocks: one BuildError naming it."""
    b = nk.Builder("causal")
    q = b.add_input("q", (2, 256, 64), nk.bfloat16)
    k = b.add_input("k", (1, 256, 64), nk.bfloat16)
    v = b.add_input("v", (1, 256, 64), nk.bfloat16)
    b.set_outputs({"o": b.causal_attention(q, k, v, scale=0.125, mask_value=-10.0)})
    with pytest.raises(BuildError, match="tensor.causal_attention.*mask_value <= -10000"):
        nk.compile(b.graph)
