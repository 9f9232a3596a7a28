"""A weight row broadcast once before a group's loops (ones-matmul, then PSUM -> SBUF copies)
does not weigh in the loop body's VectorE / ScalarE balance (TileFrame.pick_engine, count=False):
it runs once while the body repeats. Counts on the NKI IR; results against float64 NumPy."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import ForiLoopOp, TensorCopyOp
from nkigen_lite.testing.tolerance import assert_close, tolerance_for
from nkigen_lite.transforms.lower import deallocs, lead_load
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.norms import rmsnorm_reference


def _engines(ops) -> list[str]:
    return [op.attrs["engine"] for op in ops if isinstance(op, TensorCopyOp)]


def test_layernorm_broadcast_copies_leave_vector_free_for_the_first_row_sum(monkeypatch):
    """512x1024 layernorm: the copies of w and b (2 PSUM banks each; those of a row every
    VectorE reader takes from PSUM are dropped, psum_rows.py) go to ScalarE, so the first
    VectorE instruction after the constant memsets is the first row tile's statistics (its
    bn_stats, moments.py; with the copies counted, one of b's copies went to VectorE ahead of
    it). The kernel as the frame's balance leaves it: without the last tile's column split
    (tail_split.py) and without the first row tile's load moved ahead of the rows (lead_load.py),
    after which the engine search may move one copy to VectorE."""
    with monkeypatch.context() as m:
        m.setattr(deallocs, "split_last_store", lambda *a: False)
        m.setattr(lead_load, "lead_row_tile", lambda *a: False)
        k = nk.compile(get_workload("layernorm").graph(shape=(512, 1024)))
    top = [op for op in k.nki.body if not isinstance(op, ForiLoopOp)]
    copies = [op for op in top if isinstance(op, TensorCopyOp) and op.loc in ("load %w", "load %b")]
    assert copies and len(copies) <= 4
    assert set(_engines(copies)) == {"scalar"}
    vector = [op for op in k.nki.walk() if op.attrs.get("engine") == "vector" and op.name != "nki.memset"]
    assert vector[0].name == "nki.bn_stats"


def test_decode_rmsnorm_matches_float64():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    k = nk.compile(get_workload("rmsnorm").graph(shape=(1, 1024)))
    rtol, atol = tolerance_for(nk.float32)
    ref = rmsnorm_reference(x, w)["y"]
    for got in (k.run({"x": x, "w": w})["y"], nk.simulate(k, {"x": x, "w": w})["y"]):
        assert_close(got, ref, nk.float32, what="rmsnorm 1x1024", rtol=4 * rtol, atol=4 * atol)
