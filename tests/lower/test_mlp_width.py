"""The gated MLP block's intermediate width (mlp_block.emit_widest): the widest block whose
emitted SBUF peak fits, wider than the working-set formula (choose_block) allows, and never one
that overflows. Bounds are instruction counts and a scheduled-estimate ordering; numerics
against float64 NumPy on the NKI interpreter."""

import ml_dtypes
import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import ForiLoopOp, TensorTensorOp
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.transforms.lower import mlp_block

from .test_mlp_prologue import _inputs, _reference, back

BF16 = ml_dtypes.bfloat16


def _shapes(seq, e, d, inter):
    return [(1, seq, e), (1, seq, d), (e, d), (d,), (d, 2 * inter), (inter, d)]


def _zeros(seq, e, d, inter):
    return [np.zeros(s, BF16) for s in _shapes(seq, e, d, inter)]


def _acc_adds(kern) -> int:
    """Executed VectorE additions into the MLP's fp32 accumulator (one per row tile, block and
    PSUM bank of the down projection)."""

    def walk(block, mult):
        n = 0
        for op in block:
            if isinstance(op, ForiLoopOp):
                n += walk(op.body, mult * op.trip_count)
            elif isinstance(op, TensorTensorOp) and op.access("dst").tensor.name_hint.startswith("mlp_acc"):
                n += mult
        return n

    return walk(kern.nki.body, 1)


def _formula_width(monkeypatch):
    """Record choose_block's widths."""
    seen = []
    orig = mlp_block.choose_block

    def spy(ctx, blk, plans, s):
        w = orig(ctx, blk, plans, s)
        seen.append(w)
        return w

    monkeypatch.setattr(mlp_block, "choose_block", spy)
    return seen


def test_qwen3_back_half_at_seq_512_runs_1024_wide_blocks(monkeypatch):
    """Qwen3-0.6B sizes (O 2048 -> 1024, intermediate 3072) at seq 512: the formula allows 512
    columns per block, the emitted peak fits 1024, so the down projection's partial sums are
    added into acc 4 row tiles x 3 blocks x 2 PSUM banks = 24 times (48 with 512-wide blocks),
    every weight is still read once, and the scheduled estimate is shorter."""
    args = _zeros(512, 2048, 1024, 3072)
    g = nk.trace(back).trace(*args)
    seen = _formula_width(monkeypatch)
    kern = nk.compile(g)
    assert seen == [512]
    assert _acc_adds(kern) == 4 * 3 * 2
    by = bytes_by_tensor(kern.nki)
    for name, a in zip(("w_o", "w_gu", "w_dn"), (args[2], args[4], args[5])):
        assert by[name]["read"] == a.nbytes, name
    monkeypatch.setattr(mlp_block, "BLOCK_WIDTHS", (512, 256, 128))  # the formula's width only
    narrow = nk.compile(g)
    assert _acc_adds(narrow) == 4 * 6 * 2
    assert kern.estimate().scheduled_ns < narrow.estimate().scheduled_ns


def test_a_width_whose_emitted_peak_overflows_is_not_kept(monkeypatch):
    """At seq 2048 a 1536-wide block's tiles exceed SBUF (214,016 B/partition measured, more
    than 212,984): the trial emission is erased and the next width, 1024, is kept; the kernel
    verifies (compile raises on an SBUF overflow)."""
    monkeypatch.setattr(mlp_block, "BLOCK_WIDTHS", (1536, 1024, 512, 256, 128))
    kern = nk.compile(nk.trace(back).trace(*_zeros(2048, 2048, 1024, 3072)))
    assert _acc_adds(kern) == 16 * 3 * 2  # 16 row tiles x 3 blocks of 1024 x 2 PSUM banks


def test_widened_block_matches_float64(monkeypatch):
    """A back half at reduced size (seq 256 with a partial row tile, D 256, intermediate 2048)
    with the formula held to 128 columns: emitted 1024 wide (2 blocks), results within bf16
    tolerance of float64 NumPy on the interpreter."""
    monkeypatch.setattr(mlp_block, "choose_block", lambda ctx, blk, plans, s: 128 if s >= 256 else None)
    args = _inputs(320, 256, 256, 2048, seed=11)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    assert _acc_adds(kern) == 3 * 2 * 1  # 3 row tiles x 2 blocks x 1 bank (D = 256)

    want = _reference(*args)
    got = kern.run(dict(zip(g.input_names, args)))["y"].astype(np.float64)
    # bf16 output of unit-scale values (|y| up to ~6): a few bf16 ulps of the largest value
    np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * np.abs(want).max())
