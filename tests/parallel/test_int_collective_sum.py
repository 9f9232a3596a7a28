"""Integer sums across ranks wrap like NumPy (transforms/decomposition/wide_int_collective.py):
all_reduce / reduce_scatter of int32 / uint32 / narrow integers, and the row-parallel int32
matmul whose partial sums they add, compared exactly (tolerance 0) with NumPy's int64 sums
wrapped to the dtype, on the tensor interpreter (run_ranks), the rank-parallel NKI interpreter
and the simulated ranks. Before, the compiled collective saturated where NumPy wraps (an int32
total past 2**31 came out 2**31 - 1)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T
from nkigen_lite.transforms.decompose import decompose

RNG = np.random.default_rng(91)
DT = {np.int32: nk.int32, np.uint32: nk.uint32, np.int16: nk.int16, np.int8: nk.int8, np.uint8: nk.uint8}


def _values(dtype, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    near = np.where(
        RNG.random(shape) < 0.5, info.max - RNG.integers(0, 99, shape), info.min + RNG.integers(0, 99, shape)
    )
    return near.astype(dtype)


def _all_ways(g, ins, wants, world):
    k = nk.compile(g)
    for how, outs in (
        ("run_ranks", nk.run_ranks(g, ins, world=world)),
        ("run_kernel_ranks", nk.run_kernel_ranks([k] * world, ins)),
        ("simulate_ranks", nk.simulate_ranks([k] * world, ins)),
    ):
        for r in range(world):
            got = outs[r]["y"]
            assert got.dtype == wants[r].dtype, how
            np.testing.assert_array_equal(got, wants[r], err_msg=f"{how} rank {r}")
    return k


@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.int16, np.int8, np.uint8])
@pytest.mark.parametrize("world", [2, 4])
def test_all_reduce_sum_wraps(dt, world):
    """Fails before: the totals saturated."""
    b = nk.Builder("ar")
    x = b.add_input("x", (8, 12), DT[dt])
    b.set_outputs({"y": b.all_reduce(x, world=world)})
    ins = [{"x": _values(dt, (8, 12))} for _ in range(world)]
    want = sum(i["x"].astype(np.int64) for i in ins).astype(dt)
    _all_ways(b.graph, ins, [want] * world, world)


def test_reduce_scatter_sum_wraps():
    world = 2
    b = nk.Builder("rs")
    x = b.add_input("x", (8, 12), nk.int32)
    b.set_outputs({"y": b.reduce_scatter(x, world=world, axis=0)})
    ins = [{"x": _values(np.int32, (8, 12))} for _ in range(world)]
    total = sum(i["x"].astype(np.int64) for i in ins).astype(np.int32)
    _all_ways(b.graph, ins, np.split(total, world, 0), world)


def test_row_parallel_int32_matmul_is_exact():
    """Fails before: 14 of the 32 results saturated."""
    b = nk.Builder("mm")
    a = b.add_input("a", (4, 64), nk.int32)
    w = b.add_input("w", (64, 8), nk.int32)
    b.set_outputs({"y": b.matmul(a, w)})
    s = nk.shard(b.graph, 2, {"a": 1, "w": 0})
    av = RNG.integers(-(2**31), 2**31, (4, 64), dtype=np.int64).astype(np.int32)
    wv = RNG.integers(-(2**31), 2**31, (64, 8), dtype=np.int64).astype(np.int32)
    want = (av.astype(np.int64) @ wv.astype(np.int64)).astype(np.int32)
    ins = [{"a": av[:, 32 * r : 32 * r + 32], "w": wv[32 * r : 32 * r + 32]} for r in range(2)]
    ks = [nk.compile(g) for g in s.graphs]
    for how, outs in (
        ("run_ranks", nk.run_ranks(s, ins, world=2)),
        ("run_kernel_ranks", nk.run_kernel_ranks(ks, ins)),
        ("simulate_ranks", nk.simulate_ranks(ks, ins)),
    ):
        for r in range(2):
            np.testing.assert_array_equal(outs[r]["y"], want, err_msg=f"{how} rank {r}")


def test_small_range_sum_keeps_one_collective():
    """int8 values widened to int32: world * 128 fits, the one all_reduce stays."""
    b = nk.Builder("ar")
    x = b.add_input("x", (8, 12), nk.int8)
    b.set_outputs({"y": b.all_reduce(b.cast(x, nk.int32), world=4)})
    g = b.graph
    decompose(g)
    assert sum(type(op).__name__ == "AllReduceOp" for op in g.walk()) == 1
    assert not any(isinstance(op, T.BitwiseAndOp) for op in g.walk())
