"""Per-head element-wise chains split into two halves of the heads (lower/head_halves.py): on a
decoder layer of one row tile (128 rows, 4 query / 2 KV heads of 128; the layer of
tests/lower/test_attention_out.py), the per-head norms and RoPE of q and k run as two
instructions each on half of the heads, with tiles of their own; results bit for bit those of
the kernel without the split on the NKI interpreter and within bf16 tolerance (``TOL`` of
test_attention_out.py) of float64 NumPy; the scheduled time shorter."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ActivationOp, TensorReduceOp, TensorTensorOp
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower import deallocs, head_halves

from .test_attention_out import HEADS, KV, TOL, _inputs, _reference, _run, layer

SEQ = 128


@functools.lru_cache(maxsize=2)
def _kernels() -> tuple[nk.Kernel, nk.Kernel]:
    """(with the split, without it) of the one-tile layer."""
    args = _inputs(SEQ, seed=7)
    split = nk.compile(layer, *args)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(deallocs, "split_head_chains", lambda *a: False)
        plain = nk.compile(layer, *args)
    return split, plain


def _per_head(kern, loc: str) -> list:
    """Top-level instructions of the source ops named ``loc`` (the q norm's square and sum,
    RoPE's products), with the heads each spans in dim 1."""
    return [
        (op, op.access("dst").dims[1].size)
        for op in kern.nki.body
        if isinstance(op, (ActivationOp, TensorReduceOp, TensorTensorOp)) and loc in (op.loc or "")
    ]


def test_norm_and_rope_run_in_head_halves():
    """q's square (4 heads) and k's (2 heads) are two instructions on 2 / 1 heads each, each
    half writing a tile of its own; without the split one instruction on all heads."""
    split, plain = _kernels()
    squares = [(op, h) for op, h in _per_head(split, "tensor.square") if len(op.access("dst").dims) == 3]
    plain_sq = [(op, h) for op, h in _per_head(plain, "tensor.square") if len(op.access("dst").dims) == 3]
    assert sorted(h for _, h in plain_sq) == [KV, HEADS]
    assert sorted(h for _, h in squares) == [KV // 2, KV // 2, HEADS // 2, HEADS // 2]
    dsts = {op.access("dst").tensor for op, _ in squares}
    assert len(dsts) == 4 and all(t.type.shape[1] in (KV // 2, HEADS // 2) for t in dsts)
    assert split.stats().instructions_dynamic > plain.stats().instructions_dynamic
    assert split.stats().dma_bytes == plain.stats().dma_bytes
    assert split.estimate().scheduled_ns < plain.estimate().scheduled_ns


def test_split_layer_is_bitwise_equal_and_matches_float64():
    split, plain = _kernels()
    args = _inputs(SEQ, seed=7)
    out = _run(split, args)
    np.testing.assert_array_equal(out, _run(plain, args))
    assert_close(out, _reference(args), nk.bfloat16, what="one-tile layer, head halves", **TOL)


def test_what_is_split():
    """An instruction whose accesses span the same even number of heads in dim 1 is split (q's
    and k's squares: 4 and 2 heads); the input rmsnorm's square (2-D, summing all free dims
    into ``reduce_res``) is not."""
    _, plain = _kernels()
    squares = [op for op, _ in _per_head(plain, "tensor.square")]
    heads = sorted(head_halves.heads_of(op) or 0 for op in squares)
    assert heads == [0, 0, KV, HEADS], heads  # the two 2-D squares of the input and post norms
