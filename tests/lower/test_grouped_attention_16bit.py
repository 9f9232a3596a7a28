"""16-bit grouped attention keeps the Tensor engine at its 16-bit rate (lower/grouped_attention.py):
the causal mask is added in PSUM by an identity matmul when the 16-bit dtype carries its value,
and Pᵀ V runs as two 16-bit matmuls of Pᵀ's hi and lo parts instead of one fp32 matmul (4x the
cycles). Results match float64 NumPy (computed independently in test_grouped_attention.py's
``_reference``) on the NKI interpreter and the simulator within the output dtype's tolerance
(bf16 / f16: nkigen_lite.testing.tolerance), and the hi / lo pair keeps the fp32 value product's
accuracy: the bf16 result is the correctly rounded float64 one for > 99% of elements (a single
bf16 Pᵀ: about 65%). Every unit here takes the hi / lo pair and the exp's row sum: the fp32 value
product some last units may take instead and the row sums from ``Pᵀ V``
(lower/grouped_fp32_tail.py) are switched off; test_grouped_dma_transpose.py and
test_grouped_row_sum.py check them."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import MatmulOp, TensorCopyOp, TensorTensorOp
from nkigen_lite.transforms.lower import grouped_attention as kernel
from nkigen_lite.transforms.lower import grouped_fp32_tail

from .test_grouped_attention import _check, _gqa, _inputs, _reference

BF16 = ml_dtypes.bfloat16


@pytest.fixture(autouse=True)
def _no_fp32_tail(monkeypatch):
    monkeypatch.setattr(grouped_fp32_tail, "TAIL_VARIANTS", ((0, None),))


def _ops(kern, cls):
    return [op for op in kern.nki.body if isinstance(op, cls)]


def _mask_adds(kern):
    """VectorE adds of the causal mask tile (the fp32 path)."""
    return [op for op in _ops(kern, TensorTensorOp) if op.attrs["op"] == "add"]


def test_model_target_matmuls_are_16_bit():
    """The issue's causal GQA (16 / 8 heads, s128 d128 bf16): every matmul reads 16-bit operands
    (the fp32 Pᵀ V matmuls, 16 x 213 ns of the Tensor engine, are gone), per pair of query
    heads 2 score matmuls, 2 mask matmuls and 2 x 2 hi / lo value matmuls; no VectorE mask add
    and no bf16 -> fp32 widening of V."""
    arrays = _inputs(16, 8, 128, 128)
    kern = nk.compile(_gqa(), *arrays)
    mms = _ops(kern, MatmulOp)
    assert len(mms) == 8 * (2 + 2 + 4)
    for op in mms:
        assert op.access("stationary").dtype.name == "bf16", op
        assert op.access("moving").dtype.name == "bf16", op
    assert _mask_adds(kern) == []
    widen = [op for op in _ops(kern, TensorCopyOp) if op.access("dst").dtype.name == "f32"]
    assert widen == []
    assert kern.stats().dma_bytes == kern.stats().min_hbm_bytes


def test_hi_lo_value_product_keeps_fp32_accuracy(monkeypatch):
    """4 query / 2 KV heads, 128 rows, head dim 64: the result rounds like the float64 reference
    for > 99% of elements on the interpreter; with only the hi part (a bf16 Pᵀ) it would not."""
    arrays = _inputs(4, 2, 128, 64, seed=11)
    ref = _reference(*arrays, 0.125, True, -1e4)
    rounded = ref.astype(BF16).astype(np.float64)

    def mismatches():
        kern = nk.compile(_gqa(), *arrays)
        y = np.asarray(kern.run(dict(zip("qkv", arrays)))["y"]).astype(np.float64)
        return float(np.mean(y != rounded)), kern

    frac, kern = mismatches()
    assert frac < 0.01
    _check(kern, arrays, ref, nk.bfloat16, "hi / lo value product")
    full = kernel._Kernel.evacuate_pt
    monkeypatch.setattr(kernel._Kernel, "evacuate_pt", lambda self, *a: full(self, *a)[:1])
    assert mismatches()[0] > 0.1


def test_mask_bf16_cannot_carry_is_added_in_fp32():
    """A mild mask of -0.3 (-2.4 after the 1/scale: not a bf16 value) stays a VectorE fp32 add;
    the value product is still split."""
    arrays = _inputs(4, 2, 128, 64, seed=12)
    kern = nk.compile(_gqa(mask=-0.3), *arrays)
    assert len(_mask_adds(kern)) == 2  # one per unit pair
    assert len(_ops(kern, MatmulOp)) == 2 * (2 + 4)
    _check(kern, arrays, _reference(*arrays, 0.125, True, -0.3), nk.bfloat16, "mask -0.3")


def test_exact_bf16_mask_and_f16_overflow():
    """A mask of -1 (-8 after the scale, a bf16 value) goes through the matmul; in f16 the
    default -1e4 (-80,000 after the scale) overflows, so it is added in fp32."""
    arrays = _inputs(4, 2, 128, 64, seed=13)
    kern = nk.compile(_gqa(mask=-1.0), *arrays)
    assert _mask_adds(kern) == []
    _check(kern, arrays, _reference(*arrays, 0.125, True, -1.0), nk.bfloat16, "mask -1")
    arrays = _inputs(4, 2, 128, 64, dtype=np.float16, seed=14)
    kern = nk.compile(_gqa(), *arrays)
    assert len(_mask_adds(kern)) == 2
    _check(kern, arrays, _reference(*arrays, 0.125, True, -1e4), nk.float16, "f16")


def test_mask_matmuls_open_the_score_accumulations():
    """The causal mask's identity matmul is the first write of each scores PSUM tile and the
    Q Kᵀ matmul accumulates onto it: the mask matmuls wait for no load, so TensorE runs them
    before Q and K land (the issue's causal GQA: VectorE's first row max 3.41 -> 3.31 us); the
    fp32 sum S + mask is the same either way (float64 checks: test_grouped_dma_transpose.py)."""
    kern = nk.compile(_gqa(), *_inputs(16, 8, 128, 128))
    first = {}
    for op in _ops(kern, MatmulOp):
        dst = op.access("dst").tensor
        if dst.name_hint.startswith("scores"):
            ident = op.access("stationary").tensor.name_hint.startswith("identity")
            first.setdefault((dst, op.access("dst").dims[1].offset.const), (ident, op.attrs["accumulate"]))
            if not ident:
                assert op.attrs["accumulate"]
    assert len(first) == 16 and set(first.values()) == {(True, False)}
