"""nk.compile raises the collector's first-generation threshold while it runs and gives the
caller's thresholds back afterwards, also when it fails and when compiles nest or overlap."""

from __future__ import annotations

import gc
import threading

import pytest

import nkigen_lite as nk
from nkigen_lite import gc_budget


def _graph():
    b = nk.Builder("g")
    x = b.add_input("x", (128, 64), nk.float32)
    b.set_outputs({"y": b.exp(x) * 2.0})
    return b.graph


def test_threshold_raised_inside_and_restored_after(monkeypatch):
    seen = []
    real = nk.compiler.nki_verify

    def spy(*a, **kw):  # the final verification runs inside nk.compile
        seen.append(gc.get_threshold()[0])
        return real(*a, **kw)

    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        monkeypatch.setattr(nk.compiler, "nki_verify", spy)
        nk.compile(_graph())
        assert seen == [gc_budget.YOUNG_THRESHOLD]
        assert gc.get_threshold() == (700, 10, 10)
        with gc_budget.fewer_collections():
            with gc_budget.fewer_collections():
                pass
            assert gc.get_threshold()[0] == gc_budget.YOUNG_THRESHOLD  # the inner exit keeps it
        assert gc.get_threshold() == (700, 10, 10)
        with pytest.raises(nk.BuildError), gc_budget.fewer_collections():
            raise nk.BuildError("boom")
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*old)


def test_overlapping_compiles_in_threads_restore_the_callers_thresholds():
    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
        inside = []

        def first():
            with gc_budget.fewer_collections():
                a_in.set()
                b_in.wait(10)
            a_out.set()

        def second():
            a_in.wait(10)
            with gc_budget.fewer_collections():
                b_in.set()
                a_out.wait(10)  # the first leaves while this one still runs
                inside.append(gc.get_threshold()[0])

        ts = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(20)
        assert inside == [gc_budget.YOUNG_THRESHOLD]
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*old)


def test_automatic_collection_switched_off_stays_off():
    old = gc.get_threshold()
    gc.set_threshold(0)
    try:
        nk.compile(_graph())
        assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*old)
