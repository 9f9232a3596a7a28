"""Counts that witness a linear compile: whole-graph work done a fixed number of times, not once
per op (times are reported by benchmarks/compile_time.py, never asserted)."""

from __future__ import annotations

import nkigen_lite as nk
from nkigen_lite.ir import printer


def _heads(n: int):
    """n independent attention heads: every head needs layout conversions (kᵀ)."""
    b = nk.Builder(f"heads{n}")
    outs = {}
    for i in range(n):
        q = b.add_input(f"q{i}", (128, 64), nk.float32)
        k = b.add_input(f"k{i}", (128, 64), nk.float32)
        v = b.add_input(f"v{i}", (128, 64), nk.float32)
        s = (q @ b.transpose(k)) * 0.125
        e = b.exp(s - b.max(s, axis=-1, keepdims=True))
        outs[f"y{i}"] = (e / b.sum(e, axis=-1, keepdims=True)) @ v
    b.set_outputs(outs)
    return b.graph


def _namings_during_compile(graph, monkeypatch) -> int:
    count = 0
    init = printer.Printer.__init__

    def counting(self, graph=None, *a, **kw):
        nonlocal count
        count += graph is not None
        init(self, graph, *a, **kw)

    monkeypatch.setattr(printer.Printer, "__init__", counting)
    nk.compile(graph)
    monkeypatch.undo()
    return count


def test_whole_graph_namings_do_not_grow_with_the_graph(monkeypatch):
    small = _namings_during_compile(_heads(2), monkeypatch)
    large = _namings_during_compile(_heads(16), monkeypatch)
    assert large == small, (small, large)
    assert small <= 12
