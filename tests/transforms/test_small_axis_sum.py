"""canonical/small_axis_sum.py: ``sum(Y * w, axis=a)`` over a short middle axis becomes a sum of
slices (the MoE combine), so no transposing load reads ``Y``.

Numerics against float64 NumPy written here (f32 tolerance, tests/emit/helpers.py); traffic
count-based (the combine's loads move whole rows: every DMA reading ``y`` moves >= 512 B
contiguous per descriptor, checked as HBM bytes equal to reading ``y`` once)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.perf.traffic import bytes_by_tensor

from ..emit.helpers import close


def _graph(t, k, h, dt=nk.float32, keepdims=False, axis=1):
    b = nk.Builder("combine")
    y = b.add_input("y", (t, k, h), dt)
    w = b.add_input("w", (t, k, 1), dt)
    b.set_outputs({"out": b.sum(y * w, axis=axis, keepdims=keepdims)})
    return b.graph


def _ops(g) -> list[str]:
    text = nk.compile(g).ir("canonicalize")
    return [line.split("=", 1)[1].split()[0] for line in text.splitlines() if " = tensor." in line]


@pytest.mark.parametrize("keepdims", [False, True])
def test_weighted_sum_over_k_becomes_slices_and_matches_numpy(keepdims):
    t, k, h = 16, 8, 512
    g = _graph(t, k, h, keepdims=keepdims)
    ops = _ops(g)
    assert "tensor.reduce" not in ops and ops.count("tensor.add") == k - 1
    rng = np.random.default_rng(0)
    ins = {
        "y": rng.standard_normal((t, k, h)).astype(np.float32),
        "w": rng.random((t, k, 1)).astype(np.float32),
    }
    want = (ins["y"].astype(np.float64) * ins["w"]).sum(axis=1, keepdims=keepdims)
    kern = nk.compile(g)
    for what, got in (("Kernel.run", kern.run(ins)["out"]), ("nk.simulate", nk.simulate(kern, ins)["out"])):
        assert got.shape == want.shape, what
        close(got, want, nk.float32, f"weighted sum over k: {what}")
    # y is read once, in whole rows
    assert bytes_by_tensor(kern.nki)["y"]["read"] == t * k * h * 4


def _on_chip_graph():
    """The dense MoE's combine matrix: one_hot(ids) * w summed over k, computed on chip."""
    b = nk.Builder("combine_matrix")
    ids = b.add_input("ids", (4, 8), nk.int32)
    w = b.add_input("w", (4, 8, 1), nk.float32)
    b.set_outputs({"c": b.sum(b.one_hot(ids, 128).astype(nk.float32) * w, axis=1)})
    return b.graph


@pytest.mark.parametrize(
    "why, graph",
    [
        ("bf16 sums round once, not per add", _graph(16, 8, 512, dt=nk.bfloat16)),
        ("the last axis", _graph(16, 8, 512, axis=2)),
        ("a long axis", _graph(4, 64, 512)),
        ("short rows", _graph(16, 8, 64)),
        ("Y computed in the sum's own group", _on_chip_graph()),
    ],
)
def test_other_sums_keep_the_reduction(why, graph):
    assert "tensor.reduce" in _ops(graph), why
