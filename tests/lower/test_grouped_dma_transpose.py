"""Grouped attention with Qᵀ and Kᵀ loaded by DMA transposes (lower/grouped_dma_transpose.py):
bf16 with head dim 128 -- the row-pair kernel (the issue's causal GQA shape) and the one-head
kernel (3 query heads per KV head, two query tiles and two key chunks) -- against float64
NumPy on the NKI interpreter and the simulator, bf16 output tolerance (nkigen_lite.testing:
rtol 2^-7 of the output's rounding, norm-scaled); TensorE transposes only P, and every Q / K
byte moves once, by ``nki.dma_transpose``. Head dim 64 keeps the TensorE transposes."""

import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaTransposeOp, MatmulOp, TensorCopyOp, TensorTensorOp, TransposeOp
from nkigen_lite.tensor.types import TensorType
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower.grouped_fp32_tail import build_shortest, scheduled_ns
from nkigen_lite.transforms.lower.grouped_pairs import PairKernel

from .test_attention_gqa import _inputs, _reference, gqa_repeat


def _ops(kern, cls):
    return [op for op in kern.nki.walk() if isinstance(op, cls)]


@pytest.mark.parametrize(
    "hq, hkv, seq, pe_transposes, dma_transposes",
    [
        (16, 8, 128, 16, 12),  # row pairs: 8 Q (4 heads x 2 slots), 4 K (2 KV heads each)
        (3, 1, 256, 3 * 3, 1 + 2),  # one head per unit: 1 K, 2 Q (one per query tile); 3 Pᵀ per head
    ],
    ids=["pairs-16q-8kv-s128", "units-3q-1kv-s256"],
)
def test_dma_transposed_q_and_k_match_float64(hq, hkv, seq, pe_transposes, dma_transposes):
    args = _inputs(hq, hkv, seq, 128, seed=5)
    kern = nk.compile(gqa_repeat, *args)
    assert len(_ops(kern, DmaTransposeOp)) == dma_transposes
    # no TensorE transpose of Q or K: only Pᵀ (fp32) -- per unit one per key chunk it sees
    pe = _ops(kern, TransposeOp)
    assert len(pe) == pe_transposes and all(op.access("data").dtype is nk.float32 for op in pe)
    st = kern.stats()
    assert st.dma_bytes == st.min_hbm_bytes  # each byte of q, k, v and the output once
    ref = _reference(*args)
    feeds = dict(zip(("q", "k", "v"), args))
    assert_close(kern.run(feeds)["y"], ref, nk.bfloat16, what="GQA, DMA-transposed Q/K, interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, nk.bfloat16, what="GQA, DMA-transposed Q/K, simulator")


def test_head_dim_64_keeps_tensor_engine_transposes():
    """A hardware-DGE transpose needs src.shape[-1] == 128: head dim 64 stays on TensorE."""
    kern = nk.compile(gqa_repeat, *_inputs(4, 2, 128, 64))
    assert not _ops(kern, DmaTransposeOp)
    assert len(_ops(kern, TransposeOp)) > 4


def test_last_unit_groups_take_an_fp32_value_product():
    """lower/grouped_fp32_tail.py: the issue's causal GQA (16 / 8 heads, s128 bf16) runs ``Pᵀ V``
    of its last 5 head pairs (10 units, one key chunk each) as one fp32 matmul against V widened
    on GpSimd (the three V tiles of KV heads 2-7), the other 6 units as hi / lo bf16 pairs; the
    cost model schedules that kernel no longer than the all-hi / lo one. float64 reference on
    the interpreter and the simulator, bf16 output tolerance."""

    args = _inputs(16, 8, 128, 128, seed=11)
    kern = nk.compile(gqa_repeat, *args)
    fp32_pv = [op for op in _ops(kern, MatmulOp) if op.access("stationary").dtype is nk.float32]
    assert len(fp32_pv) == 10
    assert all(op.access("moving").dtype is nk.float32 for op in fp32_pv)
    lo = [op for op in _ops(kern, TensorTensorOp) if op.attrs["op"] == "subtract"]
    assert len(lo) == 6
    widen = [op for op in _ops(kern, TensorCopyOp) if op.engine == "gpsimd"]
    assert len(widen) == 3 and all(op.access("dst").dtype is nk.float32 for op in widen)
    ref = _reference(*args)
    feeds = dict(zip(("q", "k", "v"), args))
    assert_close(kern.run(feeds)["y"], ref, nk.bfloat16, what="GQA, fp32 tail, interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, nk.bfloat16, what="GQA, fp32 tail, simulator")


def test_fp32_tail_is_never_scheduled_longer():
    """The chosen count's kernel against the all-hi / lo one (fp32_tail=0), both under the cost
    model (perf/schedule.py)."""

    types = [TensorType((h, 128, 128), nk.bfloat16) for h in (16, 8, 8)]
    attrs = {"scale": 128**-0.5, "causal": True, "mask_value": -1e4}
    chosen = scheduled_ns(build_shortest(PairKernel, types, attrs))
    plain = scheduled_ns(PairKernel(types, attrs).build())
    assert chosen < plain
