"""Row sums of P from the value product (lower/grouped_attention.py ``sum_tail``, chosen in
lower/grouped_fp32_tail.py): V gets a column of ones, so ``Pᵀ V`` also gives each query row's
sum l of the P it used, and the exp accumulates no sum (64 ScalarE cycles less per exp); 1/l
is read from that PSUM column after the products. Counts of the instructions that change, and
results against float64 NumPy (test_attention_gqa.py's ``_reference``) on the NKI interpreter
and the simulator within bf16's tolerance (nkigen_lite.testing.assert_close), for hi / lo and
fp32 value products, row-pair and one-head kernels (two key chunks: l sums both)."""

import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ActivationOp, MatmulOp, MemsetOp
from nkigen_lite.tensor.types import TensorType
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower import grouped_fp32_tail
from nkigen_lite.transforms.lower.grouped_fp32_tail import scheduled_ns
from nkigen_lite.transforms.lower.grouped_pairs import PairKernel

from .test_attention_gqa import _inputs, _reference, gqa_repeat


def _ops(kern, cls):
    return [op for op in kern.nki.walk() if isinstance(op, cls)]


def _check(kern, args, what):
    ref = _reference(*args)
    feeds = dict(zip(("q", "k", "v"), args))
    assert_close(kern.run(feeds)["y"], ref, nk.bfloat16, what=f"{what}, interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, nk.bfloat16, what=f"{what}, simulator")


def _last(access) -> tuple[int, int]:
    """(first index, size) of an access's last dim."""
    d = access.dims[-1]
    return d.offset.const, d.size


def _exps(kern):
    return [op for op in _ops(kern, ActivationOp) if op.attrs["op"] == "exp"]


def _psum_reciprocals(kern, dv):
    """1/l read from the value product's PSUM tile: its column ``dv`` (V's ones column)."""
    out = []
    for op in _ops(kern, ActivationOp):
        data = op.access("data")
        if op.attrs["op"] == "reciprocal" and data.tensor.type.shape[-1] == dv + 1:
            assert data.space.name == "PSUM" and _last(data) == (dv, 1), op
            out.append(op)
    return out


def test_issue_shape_takes_row_sums_from_the_value_product():
    """The issue's causal GQA (16 / 8 heads, s128 d128 bf16): the chosen kernel takes the row
    sums of the first 5 head pairs from ``Pᵀ V`` (the last 3 keep the exp's: 6 of 16 exps
    accumulate a sum); every V tile is 129 columns wide with a ones column set on GpSimd."""
    args = _inputs(16, 8, 128, 128, seed=3)
    kern = nk.compile(gqa_repeat, *args)
    exps = _exps(kern)
    assert len(exps) == 16 and sum(op.attrs["reduce_res"] is not None for op in exps) == 6
    assert len(_psum_reciprocals(kern, 128)) == 5
    ones = [op for op in _ops(kern, MemsetOp) if _last(op.access("dst")) == (128, 1)]
    assert len(ones) == 4 and all(op.engine == "gpsimd" and op.attrs["value"] == 1.0 for op in ones)
    pv = [op for op in _ops(kern, MatmulOp) if op.access("moving").tensor.type.shape[-1] == 129]
    # 6 units' hi / lo pairs and 10 units' fp32 products; the first 5 pairs' read the ones column
    widths = sorted(_last(op.access("moving"))[1] for op in pv)
    assert widths == [128] * 6 + [129] * (6 * 2 + 4)
    assert kern.stats().dma_bytes == kern.stats().min_hbm_bytes
    _check(kern, args, "GQA, row sums from Pᵀ V")


@pytest.mark.parametrize(
    "variant, hq, hkv, seq",
    [
        ((0, 0), 4, 2, 128),  # every unit hi / lo, every row sum from Pᵀ V
        ((2, 0), 4, 2, 128),  # the last 2 head pairs fp32 (V widened with its ones column)
        ((1, 0), 3, 1, 256),  # one head per unit, two key chunks of 128
    ],
    ids=["pairs-hi-lo", "pairs-fp32-tail", "units-two-chunks"],
)
def test_row_sums_from_the_value_product_match_float64(monkeypatch, variant, hq, hkv, seq):
    monkeypatch.setattr(grouped_fp32_tail, "TAIL_VARIANTS", (variant,))
    args = _inputs(hq, hkv, seq, 128, seed=7)
    kern = nk.compile(gqa_repeat, *args)
    assert all(op.attrs["reduce_res"] is None for op in _exps(kern))
    assert _psum_reciprocals(kern, 128)
    _check(kern, args, f"GQA {hq}/{hkv} s{seq}, row sums from Pᵀ V {variant}")


def test_chosen_variant_is_never_scheduled_longer():
    """Under the cost model (perf/schedule.py) the chosen kernel is no longer than the best with
    every exp accumulating its row sum (main before the change: fp32 tail 3)."""
    types = [TensorType((h, 128, 128), nk.bfloat16) for h in (16, 8, 8)]
    attrs = {"scale": 128**-0.5, "causal": True, "mask_value": -1e4}
    chosen = scheduled_ns(grouped_fp32_tail.build_shortest(PairKernel, types, attrs))
    exp_sums = min(scheduled_ns(PairKernel(types, attrs, fp32_tail=t).build()) for t in range(4))
    assert chosen < exp_sums
