"""On-chip memory planning by liveness (issue 11, point 1): tile widths come from the peak of
simultaneously live tiles, not from a sum over every value of a group, and narrow rows are
folded several to a partition. Counts are asserted; results are compared with float64 NumPy
through nk.run, Kernel.run and nk.simulate."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.dtypes import float32
from nkigen_lite.tensor.builder import Builder
from nkigen_lite.transforms.lower.groups import FusionGroup
from nkigen_lite.transforms.lower.liveness import SCRATCH_BYTES, peak_live_bytes

from .scale_helpers import check_three_ways


def _chain(n: int, shape=(1024, 1024)):
    b = Builder("chain")
    x = b.add_input("x", shape, float32)
    y = x
    for i in range(n):
        y = y * 1.0001 if i % 2 == 0 else y + 0.5
    b.set_outputs({"y": y})
    return b.graph


def _chain_reference(n: int, x):
    y = np.asarray(x, np.float64)
    for i in range(n):
        y = y * 1.0001 if i % 2 == 0 else y + 0.5
    return y


def test_peak_live_bytes_of_a_chain_does_not_grow_with_its_length():
    peaks = []
    for n in (4, 40, 400):
        g = _chain(n, (256, 64))
        ops = [op for op in g.body if op.name in ("tensor.mul", "tensor.add")]
        group = FusionGroup(0, (256, 64), ops)
        peaks.append(peak_live_bytes(group, keep=[ops[-1].result]))
    # operand + result of one op, each fp32, and the scratch margin
    assert peaks == [8 + SCRATCH_BYTES] * 3


def test_1000_op_chain_over_1024x1024_executes_at_most_2500_instructions():
    k = nk.compile(_chain(1000))
    s = k.stats()
    assert s.instructions_dynamic <= 2500, s.summary()
    assert s.hbm_traffic_ratio <= 1.0 + 1e-9, s.summary()


def test_long_chain_result_matches_float64():
    g = _chain(60, (512, 96))
    x = np.random.default_rng(0).standard_normal((512, 96)).astype(np.float32)
    k, _ = check_three_ways(g, {"x": x}, {"y": _chain_reference(60, x)}, scale=4.0)
    # 512 rows of 96 columns: folded to 128 partitions x 4 rows, one tile
    assert k.stats().instructions_dynamic <= 60 + 4, k.stats().summary()


@pytest.mark.parametrize("rows", [1024, 1000, 390, 129])
def test_folded_rows_with_broadcast_operands_match_float64(rows):
    """Row folding with a row vector, a column and a scalar broadcast into the domain, rows that
    are not a multiple of 128 (a peeled remainder) and a second output."""
    b = Builder("bcast")
    x = b.add_input("x", (rows, 48), float32)
    w = b.add_input("w", (48,), float32)
    c = b.add_input("c", (rows, 1), float32)
    y = (x * w + c) * 0.5
    b.set_outputs({"y": y, "z": b.exp(y - 1.0)})
    rng = np.random.default_rng(rows)
    xv = rng.standard_normal((rows, 48)).astype(np.float32)
    wv = rng.standard_normal(48).astype(np.float32)
    cv = rng.standard_normal((rows, 1)).astype(np.float32)
    y64 = (xv.astype(np.float64) * wv + cv) * 0.5
    check_three_ways(b.graph, {"x": xv, "w": wv, "c": cv}, {"y": y64, "z": np.exp(y64 - 1.0)})


def test_rows_fold_into_partitions_only_when_it_saves_instructions():
    b = Builder("narrow")
    x = b.add_input("x", (100, 32), float32)
    b.set_outputs({"y": x + 1.0})
    k = nk.compile(b.graph)
    assert "hbm_view" not in str(k.nki)  # 100 rows fit the partitions: nothing to fold
