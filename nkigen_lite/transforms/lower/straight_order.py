"""Straight-line kernels reordered by the list schedule of ``emit_order.py``, each movable
elementwise instruction placed on the engine where it finishes first, when that shortens the
scheduled estimate.

After the two-stage pipeline (``stage_pipeline.py``) a short row loop is straight code, and a
small kernel is straight code from the start; in program order each engine's stream still
holds tile t's work before tile t+1's, and work that is ready early (a broadcast row copied out
of PSUM, the next tile's statistics) may sit behind work that waits. ``list_order`` places each
instruction where the cost model says it can start earliest, keeping every dependency through
on-chip tiles. Here its list scheduler also chooses engines: an instruction several engines run
with the same result (``engine_balance.candidates``: float elementwise VectorE / GpSimd /
ScalarE forms) is placed on the candidate engine where it would finish first (its cost on that
engine from perf/instruction_cost.py, the engine's free time and the cross-engine latencies of
its dependencies), the classic earliest-finish-time rule.

Applies to an elementwise or normalising kernel (``engine_balance.elementwise_kernel``: TensorE
does at most row broadcasts) whose body has no loops and whose DMAs never read an HBM tensor it
also writes (``list_order`` keeps no order between DMAs through HBM: a scratch buffer stored and
loaded back, or an output aliasing an input, keeps program order), of at most
``MAX_INSTRUCTIONS`` instructions (the list schedule is quadratic in them). The new order and
engines are kept only when the scheduled estimate (perf/schedule.py) is shorter. With a
``store_window`` the list schedule goes *store first* (``emit_order.py``); the ``deallocs`` pass
also finishes a straight-line kernel once per window of ``STORE_WINDOWS_NS`` and keeps the
shortest finish (straight_variants.py; LayerNorm 512×1024 f32: 19.7 → 19.4 µs). Results do not
change: the same instructions read and write the same tiles in an order every dependency allows,
and a moved instruction computes the same bits on its new engine.
"""

from __future__ import annotations

from ...ir.graph import Graph, ReturnOp
from ...nki.ops import AllocOp, ComputeOp, DeallocOp, DmaCopyOp, HbmViewOp, NkiOp
from ...nki.target import Target
from ...nki.types import HbmType
from .emit_order import _ListScheduler, list_order
from .engine_balance import ScheduleOracle, candidates, elementwise_kernel, rebuilt, with_engine

MAX_INSTRUCTIONS = 2000  # instructions of a straight-line kernel this pass reorders
STORE_WINDOWS_NS = (100.0,)  # store-first windows tried (emit_order.py, deallocs.py): ~ one
# same-engine dependency latency (100 engine cycles); 50 and 200 ns gave nothing more on the norms


def _hbm_root(v):
    op = v.defining_op
    while isinstance(op, HbmViewOp):
        v = op.operand(0)
        op = v.defining_op
    return v


def _qualifies(graph: Graph) -> bool:
    ops = list(graph.body)
    if len(ops) > 2 * MAX_INSTRUCTIONS:
        return False
    # only tiles, views and plain instructions (no loops, program ids, collectives, ...)
    if any(not isinstance(op, (AllocOp, DeallocOp, HbmViewOp, ReturnOp, ComputeOp, DmaCopyOp)) for op in ops):
        return False
    read, written = set(), set()
    for op in ops:
        if not isinstance(op, DmaCopyOp):
            continue
        for name, dst in (("src", read), ("dst", written)):
            acc = op.access(name)
            if acc is not None and isinstance(acc.tensor.type, HbmType):
                dst.add(_hbm_root(acc.tensor))
    if not elementwise_kernel([op for op in ops if isinstance(op, NkiOp)]):
        return False
    return sum(isinstance(op, DmaCopyOp) for op in ops) > 1 and not (read & written)


class _EngineChoosing(_ListScheduler):
    """The list scheduler of ``emit_order.py``; a movable instruction's engine is chosen when it
    is placed (earliest finish), ``chosen`` maps its index to that engine."""

    def __init__(self, instrs: list, target, oracle: ScheduleOracle, store_window: float | None = None):
        super().__init__(instrs, target, oracle.cost)
        self.store_window = store_window
        self.options: dict[int, dict] = {}
        for i, op in enumerate(instrs):
            engines = candidates(op, target)
            if len(engines) < 2:
                continue
            opts = {}
            for e in engines:
                if e == op.engine:
                    opts[e] = self.costs[i]
                else:
                    probe = rebuilt(op, e)
                    opts[e] = oracle.cost(probe)
                    probe.drop_operand_uses()
            self.options[i] = opts
        self.chosen: dict[int, str] = {}

    def _start_on(self, i: int, engine: str) -> float:
        end, costs, lat = self.end, self.costs, self.lat
        t = max((end[j] + lat.get((costs[j].engine, engine), 0.0) for j in self.deps[i]), default=0.0)
        return max(t, self.free.get(engine, 0.0))

    def start(self, i: int) -> float:
        opts = self.options.get(i)
        if opts is None:
            return super().start(i)
        return min(self._start_on(i, e) for e in opts)

    def place(self, i: int) -> None:
        opts = self.options.get(i)
        if opts is not None:
            e = min(opts, key=lambda e: (self._start_on(i, e) + opts[e].ns, e))
            self.costs[i] = opts[e]
            self.chosen[i] = e
        super().place(i)


def reorder_straight(graph: Graph, target: Target, insert_deallocs, oracle=None, store_window=None) -> bool:
    """Reorder ``graph`` (after deallocations were inserted) as the module docstring says;
    ``insert_deallocs(block)`` puts them back afterwards (deallocs.py, which imports this
    module); ``oracle`` a ScheduleOracle of ``graph`` shared with other passes (its caches);
    ``store_window`` (ns) list-schedules store first (emit_order.py). True when the new order was
    kept."""
    if not _qualifies(graph):
        return False
    block = graph.body
    before = list(block)
    oracle = oracle or ScheduleOracle(graph, target)
    old = oracle.makespan()
    for op in before:
        if isinstance(op, DeallocOp):
            op.erase()
    sched = list_order(block, target, lambda instrs, tgt: _EngineChoosing(instrs, tgt, oracle, store_window))
    if sched is not None:
        _apply_choices(sched)
    insert_deallocs(block)
    if oracle.makespan() < old:
        return True
    _restore(block, before)
    return False


def _apply_choices(sched: _EngineChoosing) -> None:
    """Put the scheduler's engine choices into the reordered block."""
    for i, e in sorted(sched.chosen.items()):
        op = sched.instrs[i]
        if op.engine != e:
            with_engine(op, e)


def _restore(block, before: list) -> None:
    """Put back the program order, engines, deallocations and copies ``before`` lists."""
    kept = set(before)
    current = list(block)
    for op in current:
        if op in kept:
            block.remove(op)
        else:
            op.erase()
    present = set(current)
    for op in before:
        if op not in present:  # erased: a deallocation, a moved instruction, a dropped copy
            if isinstance(op, DeallocOp):
                fresh = DeallocOp([op.operand(0)])
                fresh.loc = op.loc
                op = fresh
            elif not isinstance(op, AllocOp):
                op = rebuilt(op, op.engine)
        block.append(op)
