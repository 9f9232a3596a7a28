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
    TensorScalarOp,
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
    added to the 128 x 128 diagonal block of each (head, tile) only, by one identity matmul into
    the scores' PSUM bank (no VectorE add): each (head, tile) is one row max and one exp."""
    args = layer_inputs(512, 16, 8, 128, 1024)
    kern = nk.compile(layer_attention, *args)
    tiles, chunk_products = 4, 16 * (1 + 2 + 3 + 4)
    matmuls = _count(kern, MatmulOp)
    score_matmuls = 16 * tiles  # at most 512 keys: one PSUM bank per (head, tile)
    mask_matmuls = [
        (op, m)
        for op, m in _attention_ops(kern, MatmulOp)
        if op.access("stationary").tensor.name_hint.startswith("identity")
    ]
    assert sum(m for _, m in mask_matmuls) == 16 * tiles
    assert all(op.attrs["accumulate"] and op.access("dst").free_size == 128 for op, _ in mask_matmuls)
    assert matmuls == score_matmuls + 16 * tiles + chunk_products
    transposes = _count(kern, TransposeOp)
    assert transposes == 8 * 4 + 16 * 4 + chunk_products  # Kᵀ, Qᵀ, Pᵀ per chunk
    exps = [(op, m) for op, m in _attention_ops(kern, ActivationOp) if op.attrs["op"] == "exp"]
    assert sum(m * op.access("dst").free_size for op, m in exps) == chunk_products * 128
    assert sum(m for _, m in exps) == 16 * tiles
    assert _count(kern, AffineSelectOp) == 2  # the identity and the mask tile
    assert _count(kern, TensorTensorOp) == 0


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


def _f16_attention(hd: int):
    """The op built by hand in f16: 2 query heads over 1 KV head, seq 256, scale 1/√hd."""
    b = nk.Builder("causal_f16")
    q = b.add_input("q", (2, 256, hd), nk.float16)
    k = b.add_input("k", (1, 256, hd), nk.float16)
    v = b.add_input("v", (1, 256, hd), nk.float16)
    b.set_outputs(
        {"o": b.causal_attention(q, k, v, scale=float(np.float32(1 / np.sqrt(hd))), mask_value=-1e4)}
    )
    return nk.compile(b.graph)


def _f16_reference(q, k, v):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    k, v = np.repeat(k, 2, axis=0), np.repeat(v, 2, axis=0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, s - 1e4)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("hd, in_psum", [(16, True), (128, False)], ids=["mask-in-f16", "f16-overflow"])
def test_f16_mask_by_identity_matmul_or_fp32_add(hd, in_psum):
    """f16: mask/scale = -1e4·√16 = -40,000 is an f16 value, accumulated into PSUM by the
    identity matmul; -1e4·√128 = -113,137 overflows f16 (0 × inf would be NaN in the matmul), so
    it is added in fp32 by VectorE. Both against float64 on the interpreter and the simulator."""
    kern = _f16_attention(hd)
    idents = [
        op
        for op, _ in _attention_ops(kern, MatmulOp)
        if op.access("stationary").tensor.name_hint == "identity"
    ]
    assert bool(idents) == in_psum
    assert (_count(kern, TensorTensorOp) == 0) == in_psum
    rng = np.random.default_rng(hd)
    feeds = {
        n: rng.standard_normal(s).astype(np.float16)
        for n, s in (("q", (2, 256, hd)), ("k", (1, 256, hd)), ("v", (1, 256, hd)))
    }
    ref = _f16_reference(feeds["q"], feeds["k"], feeds["v"])
    assert_close(kern.run(feeds)["o"], ref, nk.float16, what="f16 causal attention, interpreter")
    assert_close(nk.simulate(kern, feeds)["o"], ref, nk.float16, what="f16 causal attention, simulator")


def _o_scale_engines(kern) -> list:
    """Engines of the ``O · 1/Σ`` multiplies (tensor_scalar by the per-row reciprocal)."""
    return [
        op.attrs["engine"]
        for op, _ in _attention_ops(kern, TensorScalarOp)
        if op.attrs["op0"] == "multiply" and not isinstance(op.attrs["operand0"], float)
    ]


def test_o_scaling_alternates_vector_and_scalar_with_several_query_tiles():
    """Seq 512 (4 query tiles, 64 units): ``O · 1/Σ`` runs on VectorE and ScalarE in turn, 32
    each; one query tile (seq 128): on VectorE only (in turn measured 0.3 µs longer there)."""
    kern = nk.compile(layer_attention, *layer_inputs(512, 16, 8, 128, 1024))
    engines = _o_scale_engines(kern)
    assert sorted(engines) == ["scalar"] * 32 + ["vector"] * 32
    one = nk.compile(layer_attention, *layer_inputs(128, 16, 8, 128, 1024))
    assert _o_scale_engines(one) == ["vector"] * 16


def test_scale_that_is_not_an_fp32_number_is_rounded_once():
    """``scale=1/np.sqrt(128)`` as a Python float (not exactly fp32) built by hand: the kernel
    uses its fp32 rounding, as the op's reference does (it failed verification before: "operand0
    must be an fp32 number"). bf16, 2 query heads over 1 KV head, seq 256, against float64."""
    b = nk.Builder("causal_scale")
    q = b.add_input("q", (2, 256, 128), nk.bfloat16)
    k = b.add_input("k", (1, 256, 128), nk.bfloat16)
    v = b.add_input("v", (1, 256, 128), nk.bfloat16)
    b.set_outputs({"o": b.causal_attention(q, k, v, scale=1 / np.sqrt(128), mask_value=-1e4)})
    kern = nk.compile(b.graph)
    rng = np.random.default_rng(128)
    feeds = {
        n: rng.standard_normal(s).astype(ml_dtypes.bfloat16)
        for n, s in (("q", (2, 256, 128)), ("k", (1, 256, 128)), ("v", (1, 256, 128)))
    }
    ref = _f16_reference(feeds["q"], feeds["k"], feeds["v"])
    assert_close(kern.run(feeds)["o"], ref, nk.bfloat16, what="bf16 causal attention, interpreter")
    assert_close(nk.simulate(kern, feeds)["o"], ref, nk.bfloat16, what="bf16 causal attention, simulator")
