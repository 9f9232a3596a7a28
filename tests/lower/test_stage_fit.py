"""Loop pairing refused when it would cost the loop its two-stage pipeline
(transforms/lower/stage_fit.py). Decisions on an rmsnorm row loop at SBUF budgets around the
pipeline's need; on the Qwen3-0.6B layer at seq 2048 the same bytes moved with the MLP
prologue's loop pipelined (a shorter scheduled estimate than with pairing unguarded)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ForiLoopOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.transforms.lower import deallocs, interleave, stage_fit
from nkigen_lite.workloads import get_workload

from .qwen3_kernels import qwen3_layer_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import model_targets  # noqa: E402


@pytest.fixture
def row_loop(monkeypatch):
    """The rmsnorm 2048x1024 row loop (16 trips) as lowered, neither paired nor pipelined."""
    monkeypatch.setattr(deallocs, "interleave_loops", lambda *a: 0)
    monkeypatch.setattr(deallocs, "pipeline_stages", lambda *a: 0)
    monkeypatch.setattr(deallocs, "plan_rotation", lambda *a: 0)
    kern = nk.compile(get_workload("rmsnorm").graph(shape=(2048, 1024)))
    (loop,) = [op for op in kern.nki.body if isinstance(op, ForiLoopOp)]
    assert loop.trip_count == 16
    return loop


def _least_live_that_fails(loop) -> int:
    """The fewest live SBUF bytes per partition beside which ``loop``'s pipeline does not fit."""
    lo, hi = 0, TRN2.sbuf_bytes_per_partition
    assert stage_fit.pipeline_fits(loop, lo, 0, TRN2) and not stage_fit.pipeline_fits(loop, hi, 0, TRN2)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if stage_fit.pipeline_fits(loop, mid, 0, TRN2) else (lo, mid)
    return hi


def test_pairing_refused_only_when_it_loses_the_pipeline(row_loop):
    ops = interleave._interleaved(row_loop)
    (paired,) = [op for op in ops if isinstance(op, ForiLoopOp)]
    assert paired.trip_count == 8
    paired_fails = _least_live_that_fails(paired)
    alone_fails = _least_live_that_fails(row_loop)
    assert paired_fails < alone_fails  # the paired loop's pipeline holds more tiles
    # both pipelines fit: pairing allowed
    assert stage_fit.keeps_pipeline(row_loop, ops, paired_fails - 1, 0, TRN2)
    # only the loop as it is fits: pairing refused
    assert not stage_fit.keeps_pipeline(row_loop, ops, paired_fails, 0, TRN2)
    assert not stage_fit.keeps_pipeline(row_loop, ops, alone_fails - 1, 0, TRN2)
    # neither fits: pairing allowed (nothing to keep)
    assert stage_fit.keeps_pipeline(row_loop, ops, alone_fails, 0, TRN2)


def test_qwen3_layer_seq_2048_prologue_stays_pipelined(monkeypatch):
    """All of O on chip leaves the MLP prologue's row loop 165,892 B per partition beside it:
    paired twice its pipeline would not fit (239,668 B), paired once it does. Same bytes moved
    and instructions executed as with pairing unguarded, a shorter scheduled estimate
    (1,736.7 -> 1,692.9 us when this test was written)."""
    kern = qwen3_layer_kernel(2048)
    monkeypatch.setattr(deallocs, "keeps_pipeline", lambda *a: True)
    plain = nk.compile(model_targets._qwen(2048))
    assert kern.stats().hbm_bytes == plain.stats().hbm_bytes
    guarded, unguarded = kern.estimate(), plain.estimate()
    assert guarded.instructions == unguarded.instructions
    assert guarded.scheduled_ns < unguarded.scheduled_ns
