"""Instruction costs and scheduler roots remembered per op (perf/instruction_cost.py,
perf/schedule.py ``_roots``): the search passes of the lowering schedule a kernel many times,
each with a fresh oracle, and every instruction's cost rule runs once per op, not once per
schedule (a count, never a time); an op whose operand is replaced is costed again."""

from __future__ import annotations

from collections import Counter

import nkigen_lite as nk
from nkigen_lite.nki.ops import NkiOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf import instruction_cost as ic
from nkigen_lite.perf import schedule
from nkigen_lite.workloads import get_workload


def test_each_instruction_costed_once_per_compile(monkeypatch):
    calls: Counter = Counter()  # by op (held: no identity reused)
    for cls, rule in list(ic.COST_RULES.items()):
        monkeypatch.setitem(ic.COST_RULES, cls, lambda op, t, _r=rule: calls.update([op]) or _r(op, t))
    roots: Counter = Counter()
    reads = schedule._reads
    monkeypatch.setattr(schedule, "_reads", lambda op: roots.update([op]) or reads(op))
    k = nk.compile(get_workload("layernorm").graph(shape=(128, 2048)))  # engine balance searched
    monkeypatch.undo()
    assert max(calls.values()) == 1, calls.most_common(3)
    assert max(roots.values()) == 1, roots.most_common(3)
    assert all(op in calls for op in k.nki.walk() if isinstance(op, NkiOp) and op.name != "nki.dealloc")


def test_cost_recomputed_when_an_operand_changes():
    k = nk.compile(get_workload("layernorm").graph(shape=(128, 2048)))
    op = next(o for o in k.nki.walk() if o.name == "nki.dma_copy")
    first = ic.instruction_cost(op, TRN2)
    assert ic.instruction_cost(op, TRN2) is first
    op.set_operand(0, op.operand(0))  # the same value: still remembered
    assert ic.instruction_cost(op, TRN2) is first
    memo = op.__dict__["_cost"]
    op.__dict__["_cost"] = (memo[0], memo[1], (object(),) * len(memo[2]), memo[3])  # another operand
    again = ic.instruction_cost(op, TRN2)
    assert again is not first and again == first
