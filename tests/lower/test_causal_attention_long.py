"""Causal attention over more keys than one block (lower/causal_attention_long.py): an online
softmax over key blocks, blocks past the diagonal neither loaded nor computed, the mask built on
chip once and added to diagonal chunks only, K and V read once per KV head. The block size is
the kernel-level parameter ``KEY_BLOCK`` (2048 keys on trn2); the numeric tests lower it so that
small arrays take the long path. Numerics against float64 NumPy on the NKI interpreter and the
simulator (bf16 output tolerance, ``assert_close``'s for bf16); counts on the NKI IR."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.nki.ops import ActivationOp, AffineSelectOp, MatmulOp
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower import causal_attention_long as long_kernel
from nkigen_lite.transforms.lower.causal_attention_dispatch import refusal

from .test_causal_attention import _attention_ops, _bytes_read, _count
from .test_view_chains import layer_attention, layer_attention_reference, layer_inputs


def _inputs(seq, heads, kv, hd, seed):
    """layer_inputs with keys growing along the sequence, so later key blocks raise the running
    max (the rescale by exp(m - m') matters)."""
    args = layer_inputs(seq, heads, kv, hd, 96, seed=seed)
    ramp = (1 + 2 * np.arange(seq) / seq)[None, :, None, None]
    args[1] = (args[1].astype(np.float32) * ramp).astype(args[1].dtype)
    return args


def _rescales(kern) -> int:
    """Executed α = exp(β' - β) activations: one per (head, tile, key block after the first)."""
    return sum(
        m
        for op, m in _attention_ops(kern, ActivationOp)
        if op.access("dst").tensor.name_hint.startswith("rescale")
    )


@pytest.mark.parametrize(
    "block, seq, heads, kv, hd",
    [(256, 640, 4, 2, 64), (256, 600, 3, 1, 128), (128, 300, 2, 2, 32), (256, 520, 2, 1, 64)],
    ids=["gqa-3-blocks", "partial-tile-mqa-d128", "mha-block-128", "tail-8-rows"],
)
def test_long_attention_matches_float64(monkeypatch, block, seq, heads, kv, hd):
    """Sequences that are not multiples of the block (600, 300, 520: the last tile's block ends
    mid-block, 520 leaves an 8-row tile whose diagonal chunk starts a new block), grouped,
    multi-query and multi-head; interpreter and simulator."""
    monkeypatch.setattr(long_kernel, "KEY_BLOCK", block)
    args = _inputs(seq, heads, kv, hd, seed=seq)
    kern = nk.compile(layer_attention, *args)
    assert _count(kern, MatmulOp) > 0, "the causal_attention lowering was not used"
    assert "rescale" in kern.nki_source(), "the online-softmax kernel was not used"
    ref = layer_attention_reference(*args)
    feeds = dict(zip(("q", "k", "v", "w_o"), args))
    assert_close(kern.run(feeds)["y"], ref, nk.bfloat16, what="long causal attention, interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, nk.bfloat16, what="long causal attention, simulator")


def test_blocks_past_the_diagonal_are_neither_loaded_nor_computed(monkeypatch):
    """4 / 2 heads, head dim 64, seq 640, blocks of 256 keys (5 tiles): tile t's scores cover
    keys 0 .. 128(t+1) only (Σ = 128·15 per row and head), K and V cross HBM once, the mask is
    one affine_select (beside the identity's) accumulated into the 5 diagonal chunks per head by an
    identity matmul, and α is computed once per later block: tiles 2, 3 have 2 blocks, tile 4
    has 3 → 4 per head."""
    monkeypatch.setattr(long_kernel, "KEY_BLOCK", 256)
    args = _inputs(640, 4, 2, 64, seed=1)
    kern = nk.compile(layer_attention, *args)
    for name, a in zip(("q", "k", "v"), args):
        assert _bytes_read(kern, name) == a.nbytes, name
    score_cols = sum(
        m * op.access("moving").free_size
        for op, m in _attention_ops(kern, MatmulOp)
        if op.access("dst").tensor.name_hint.startswith("scores")
        and not op.access("stationary").tensor.name_hint.startswith("identity")
    )
    assert score_cols == 4 * 128 * (1 + 2 + 3 + 4 + 5)
    exp_cols = sum(
        m * op.access("dst").free_size
        for op, m in _attention_ops(kern, ActivationOp)
        if op.attrs["op"] == "exp" and op.access("dst").tensor.name_hint.startswith("probs")
    )
    assert exp_cols == 4 * 128 * (1 + 2 + 3 + 4 + 5)
    assert _count(kern, AffineSelectOp) == 2
    mask_adds = [
        (op, m)
        for op, m in _attention_ops(kern, MatmulOp)
        if op.access("stationary").tensor.name_hint.startswith("identity")
    ]
    assert sum(m for _, m in mask_adds) == 4 * 5
    assert all(op.attrs["accumulate"] and op.access("moving").free_size == 128 for op, _ in mask_adds)
    assert _rescales(kern) == 4 * 4


def test_qwen3_attention_at_seq_4096_runs_the_online_kernel():
    """Qwen3-0.6B attention shapes at seq 4096 (2 query heads / 1 KV head, head dim 128, compile
    only): formed as tensor.causal_attention (before the long kernel it was refused and the
    attention fell to the generic path), K and V read once, two key blocks for tiles 16..31; the
    loop body list-scheduled in windows (one schedule over the sweep ran out of SBUF and kept
    program order: 3.1x the busiest engine's time, 1.4x in windows)."""
    args = layer_inputs(4096, 2, 1, 128, 128)
    kern = nk.compile(layer_attention, *args)
    for name, a in zip(("q", "k", "v"), args):
        assert _bytes_read(kern, name) == a.nbytes, name
    assert _rescales(kern) == 2 * 16
    chunks = sum(range(1, 33))  # key chunks 0..t of tile t
    pv = sum(
        m
        for op, m in _attention_ops(kern, MatmulOp)
        if op.access("stationary").tensor.name_hint.startswith("probs_t")
    )
    assert pv == 2 * chunks
    e = kern.estimate()
    assert e.scheduled_ns < 1.6 * e.lower_bound_ns


def test_refusal_names_the_resident_budget():
    """Beyond what one KV head's operands may hold in SBUF: the rule with the numbers."""
    why = refusal((16, 32768, 128), (8, 32768, 128), (8, 32768, 128), "bf16", -1e4)
    assert why is not None and "B per partition at 32768 keys" in why and "3/4 of SBUF" in why
    assert refusal((16, 4096, 128), (8, 4096, 128), (8, 4096, 128), "bf16", -1e4) is None


def test_long_op_with_a_weak_mask_is_a_clear_error(monkeypatch):
    """The op built by hand past the block size with a mask too weak to skip blocks: one
    BuildError naming the op, the value and the rule."""
    monkeypatch.setattr(long_kernel, "KEY_BLOCK", 128)
    b = nk.Builder("causal")
    q = b.add_input("q", (2, 256, 64), nk.bfloat16)
    k = b.add_input("k", (1, 256, 64), nk.bfloat16)
    v = b.add_input("v", (1, 256, 64), nk.bfloat16)
    b.set_outputs({"o": b.causal_attention(q, k, v, scale=0.125, mask_value=-10.0)})
    with pytest.raises(BuildError, match=r"tensor.causal_attention .*mask_value -10.0: .*a mask <= -10000"):
        nk.compile(b.graph)
