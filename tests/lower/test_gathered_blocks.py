"""``tensor.gathered_matmul`` with M > 1 rows per selection in blocks of selections
(transforms/lower/gathered_blocks.py): one store per block of up to 128 / M selections instead of
one per selection, ``a`` staged once. Numerics on the NKI interpreter and the simulator against
float64 NumPy written here (bf16 tolerance as tests/emit/helpers.py); counts from the kernel's
DMAs."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ops as N
from nkigen_lite.nki.types import HbmType

from ..emit.helpers import close


def _graph(na, group, e, k, n_cols, m):
    b = nk.Builder("gm")
    a = b.add_input("a", (na, m, k), nk.bfloat16)
    t = b.add_input("table", (e, k, n_cols), nk.bfloat16)
    i = b.add_input("ids", (na * group,), nk.int32)
    b.set_outputs({"y": b.composite("gathered_matmul", a, t, i, group=group)})
    return b.graph


def _dmas(k):
    """(DMAs writing HBM, DMAs reading ``a``), loops multiplied out."""
    counts = {"store": 0, "a": 0}

    def walk(block, mult):
        for op in block:
            if isinstance(op, N.ForiLoopOp):
                at = op.attrs
                walk(op.regions[0].block, mult * -(-(at["upper"] - at["lower"]) // at["step"]))
            elif isinstance(op, N.DmaCopyOp) and not isinstance(op, N.DmaGatherOp):
                dst, src = op.access("dst").tensor, op.access("src").tensor
                if isinstance(dst.type, HbmType):
                    counts["store"] += mult
                root = src
                while isinstance(root.defining_op, N.HbmViewOp):
                    root = root.defining_op.operand(0)
                if root.name_hint == "a":
                    counts["a"] += mult

    walk(k.nki.body, 1)
    return counts


CASES = [
    # (na, group, experts, K, N, M, stores): 20 selections of 8 rows: a block of 16 and one of 4
    (1, 20, 20, 256, 768, 8, 2),  # a shared by every selection (the tokens into gate / up)
    (20, 1, 20, 256, 512, 8, 2),  # a row block per selection (the activations into down)
    (1, 40, 40, 128, 256, 16, 5),  # M = 16: blocks of 8 selections
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"na{c[0]}_g{c[1]}_m{c[5]}")
def test_blocks_store_once_per_block_and_match_float64(case):
    na, group, e, k, n_cols, m, stores = case
    rng = np.random.default_rng(na + group)
    ids = rng.permutation(e)[: na * group].astype(np.int32)
    ins = {
        "a": rng.standard_normal((na, m, k)).astype(nk.bfloat16.np_dtype),
        "table": (rng.standard_normal((e, k, n_cols)) / np.sqrt(k)).astype(nk.bfloat16.np_dtype),
        "ids": ids,
    }
    kern = nk.compile(_graph(na, group, e, k, n_cols, m))
    counts = _dmas(kern)
    assert counts["store"] == stores, counts  # one per block (was one per selection: 20, 20, 40)
    assert counts["a"] <= -(-na * m // 128), counts  # a staged once, in 128-row loads
    want = np.repeat(ins["a"].astype(np.float64), group, axis=0) @ ins["table"].astype(np.float64)[ids]
    for got in (kern.run(ins)["y"], nk.simulate(kern, ins)["y"]):
        close(got, want, nk.bfloat16, "gathered_matmul in blocks")
