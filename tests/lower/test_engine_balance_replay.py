"""The engine balance's record and replay (transforms/lower/engine_balance.py): the decisions of
a search on a copy of a kernel, put in place on the kernel without searching again, give the
same NKI IR text as searching it (head_columns.py hands the kept copy's decisions to the staged
balance that follows); a record that does not fit falls back to the search. Counts of searches,
never times."""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite.ir.clone import clone_graph
from nkigen_lite.nki.target import TRN2
from nkigen_lite.transforms.lower import deallocs, engine_balance
from nkigen_lite.workloads import get_workload


@pytest.fixture(scope="module")
def unbalanced():
    """The NKI graph of a LayerNorm kernel compiled without the engine balance."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(deallocs, "balance_engines", lambda *a: 0)
        return nk.compile(get_workload("layernorm").graph(shape=(128, 2048))).nki


def _balanced(graph, monkeypatch, record=None, replay=None) -> tuple[str, int]:
    """(IR text of a balanced copy of ``graph``, searches run)."""
    searches = []
    search = engine_balance._search
    monkeypatch.setattr(engine_balance, "_search", lambda *a: searches.append(1) or search(*a))
    g = clone_graph(graph)
    engine_balance.balance_engines(g, TRN2, None, None, False, record, replay)
    monkeypatch.undo()
    return str(g), len(searches)


def test_replay_gives_the_searched_kernel_without_searching(unbalanced, monkeypatch):
    record: list = []
    searched, n = _balanced(unbalanced, monkeypatch, record)
    assert n == 1 and len(record) == 1
    assert searched != str(unbalanced)  # the search moved instructions (3 of them)
    replayed, n = _balanced(unbalanced, monkeypatch, None, record[0])
    assert n == 0
    assert replayed == searched


def test_replay_that_does_not_fit_searches(unbalanced, monkeypatch):
    record: list = []
    searched, _ = _balanced(unbalanced, monkeypatch, record)
    states, makespan = record[0]
    for bad in ((states[:-1], makespan), (states, makespan + 1.0)):
        again, n = _balanced(unbalanced, monkeypatch, None, bad)
        assert n == 1
        assert again == searched
