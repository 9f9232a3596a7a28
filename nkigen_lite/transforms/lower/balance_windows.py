"""Engine balance of kernels above the whole-kernel search cap, one window at a time.

``engine_balance.py`` tries each move on the whole kernel's schedule, so its cost is the number
of tries times the kernel's size; it stops at ``MAX_STAGED_INSTRUCTIONS`` static instructions.
A decoder layer at seq 2048 has ~11,000 (its attention straight-line code), and its stages
chose their engines without seeing each other's load. Here the top-level ops are cut into
consecutive windows of about ``WINDOW`` static instructions. The schedule of everything before
a window is computed once and forked (``Scheduler.fork``); each try schedules only the window
and the next ``LOOKAHEAD`` static instructions after that prefix, and is kept when that partial
schedule ends earlier (its ``makespan``: every engine's last instruction and every transfer
booked). The same movable instructions and engines as ``engine_balance.candidates`` (the PSUM
row variant is not tried), whole source ops per window (the costliest ``TRIES`` first, each
into its other engines). Then the prefix advances over the window as decided. Every try costs
O(WINDOW + LOOKAHEAD) instructions and a window gets at most a fixed number of tries, so the
pass is linear in the kernel's size. The prefix, advanced over every window, is the final
whole-kernel schedule: the moves are kept only if the kernel got shorter (else all are
undone). Results do not change: a moved instruction computes the same bits on every candidate
engine.
"""

from __future__ import annotations

from ...ir.graph import Graph
from ...nki.ops import ForiLoopOp, NkiOp
from ...nki.target import Target
from ...perf.instruction_cost import FREE_OPS
from ...perf.schedule import Scheduler
from .engine_balance import (
    MAX_STAGED_INSTRUCTIONS,
    ScheduleOracle,
    _instructions,
    _Movable,
    candidates,
    elementwise_kernel,
)

WINDOW = 200  # static instructions per window (at least; a loop is never cut)
LOOKAHEAD = 200  # static instructions after the window each try also schedules
TRIES = 32  # source ops (the costliest first) tried per window


def _size(op) -> int:
    """Static instructions of a top-level op (a loop: its body's)."""
    if isinstance(op, ForiLoopOp):
        return sum(1 for o in op.body.walk() if isinstance(o, NkiOp) and not isinstance(o, ForiLoopOp))
    return 1 if isinstance(op, NkiOp) else 0


def _windows(sizes: list) -> list[tuple[int, int]]:
    """[start, end) ranges of top-level indices, each of at least ``WINDOW`` instructions (the
    last may hold fewer)."""
    out, start, n = [], 0, 0
    for i, s in enumerate(sizes):
        n += s
        if n >= WINDOW:
            out.append((start, i + 1))
            start, n = i + 1, 0
    if start < len(sizes):
        out.append((start, len(sizes)))
    return out


def searched_in_windows(instrs: list) -> bool:
    """A kernel with matmuls above the whole-kernel search cap (engine_balance.searched)."""
    return not elementwise_kernel(instrs) and len(instrs) > MAX_STAGED_INSTRUCTIONS


def balance_in_windows(graph: Graph, target: Target, oracle: ScheduleOracle | None = None) -> int:
    """The module docstring's search; returns how many instructions end on another engine."""
    instrs: list = []
    _instructions(graph.body, instrs)
    if not searched_in_windows(instrs):
        return 0
    oracle = oracle or ScheduleOracle(graph, target)
    tops = list(graph.body)
    slots: list = []  # per top-level op: itself, or the _Movable it is
    owned: list = []  # per top-level op: the movables inside it
    for top in tops:
        inner = list(top.body.walk()) if isinstance(top, ForiLoopOp) else [top]
        ms = []
        for op in inner:
            if isinstance(op, NkiOp):
                states = candidates(op, target)
                if len(states) > 1:
                    ms.append(_Movable(op, states, {}))
        owned.append(ms)
        slots.append(ms[0] if ms and ms[0].tmpl is top else top)
    movable = [m for ms in owned for m in ms]
    if not movable:
        return 0
    before = oracle.makespan()  # fills the oracle's costs of every instruction

    def ops(lo: int, hi: int) -> list:
        return [s.forms[s.state][0] if isinstance(s, _Movable) else s for s in slots[lo:hi]]

    sizes = [_size(t) for t in tops]
    wins = _windows(sizes)
    base = Scheduler(target, oracle.costs)
    base.info = oracle.info
    for lo, hi in wins:
        look = hi
        n = 0
        while look < len(tops) and n < LOOKAHEAD:
            n += sizes[look]
            look += 1
        mine = [m for ms in owned[lo:hi] for m in ms]
        if mine:
            _search_window(mine, lambda lo=lo, look=look: _partial(base, ops(lo, look), oracle), oracle)
        base.run_ops(ops(lo, hi))
    after = _whole(base)  # the prefix now covers the whole kernel as decided
    if after >= before - 1e-6:
        for m in movable:
            m.set(m.tmpl.engine)
    for m in movable:
        m.finish(oracle.replaced)
    return sum(m.state != m.tmpl.engine for m in movable)


def _whole(base: Scheduler) -> float:
    """The scheduled time of the kernel once ``base`` has run every top-level op: the same
    schedule as ``ScheduleOracle.makespan`` (the same instructions in the same order on one
    scheduler), without scheduling the kernel once more."""
    return base.makespan


def _partial(base: Scheduler, ops: list, oracle: ScheduleOracle) -> float:
    """The end of ``ops`` scheduled after ``base``'s state (which is left unchanged)."""
    for op in ops:
        for o in op.body.walk() if isinstance(op, ForiLoopOp) else [op]:
            if isinstance(o, NkiOp) and not isinstance(o, (FREE_OPS, ForiLoopOp)):
                oracle.cost(o)
    s = base.fork()
    s.run_ops(ops)
    return s.makespan


def _search_window(mine: list, measure, oracle: ScheduleOracle) -> None:
    """Greedy over the window's source ops, the costliest first: all of a source op's movable
    instructions into each other state, kept when ``measure()`` drops."""
    groups: dict = {}
    for m in mine:
        groups.setdefault((m.tmpl.loc or m.tmpl.name, m.tmpl.name, m.states), []).append(m)
    by_work = sorted(
        groups.items(), key=lambda kv: -sum(oracle.cost(m.tmpl).ns for m in kv[1])
    )  # stable: program order among equals
    best = measure()
    for (_, _, states), members in by_work[:TRIES]:
        for st in states:
            old = [m.state for m in members]
            if all(s == st for s in old):
                continue
            for m in members:
                m.set(st)
            t = measure()
            if t < best - 1e-6:
                best = t
                continue
            for m, s in zip(members, old):
                m.set(s)
