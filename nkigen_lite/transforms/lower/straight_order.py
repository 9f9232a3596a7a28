"""Straight-line kernels reordered by the list schedule of ``emit_order.py``, when that shortens
the scheduled estimate.

After the two-stage pipeline (``stage_pipeline.py``) a short row loop is straight code, and a
small kernel is straight code from the start; in program order each engine's stream still
holds tile t's work before tile t+1's, and work that is ready early (a broadcast row copied out
of PSUM, the next tile's statistics) may sit behind work that waits. ``list_order`` places each
instruction where the cost model says it can start earliest, keeping every dependency through
on-chip tiles.

Applies to a kernel body without loops whose DMAs never read an HBM tensor the kernel also
writes (``list_order`` keeps no order between DMAs through HBM: a scratch buffer stored and
loaded back, or an output aliasing an input, keeps program order). The new order is kept only
when the scheduled estimate (perf/schedule.py) is shorter; results do not change, since the same
instructions read and write the same tiles in an order every dependency allows.
"""

from __future__ import annotations

from ...ir.graph import Graph
from ...nki.ops import DeallocOp, DmaCopyOp, HbmViewOp
from ...nki.target import Target
from ...nki.types import HbmType
from ...perf.schedule import Scheduler
from .emit_order import list_order


def _hbm_root(v):
    op = v.defining_op
    while isinstance(op, HbmViewOp):
        v = op.operand(0)
        op = v.defining_op
    return v


def _qualifies(graph: Graph) -> bool:
    ops = list(graph.body)
    if any(op.regions for op in ops):
        return False
    read, written = set(), set()
    for op in ops:
        if not isinstance(op, DmaCopyOp):
            continue
        for name, dst in (("src", read), ("dst", written)):
            acc = op.access(name)
            if acc is not None and isinstance(acc.tensor.type, HbmType):
                dst.add(_hbm_root(acc.tensor))
    return sum(isinstance(op, DmaCopyOp) for op in ops) > 1 and not (read & written)


def _makespan(graph: Graph, target: Target) -> float:
    sched = Scheduler(target, {})
    sched.run(graph.body)
    return sched.makespan


def reorder_straight(graph: Graph, target: Target, insert_deallocs) -> bool:
    """Reorder ``graph`` (after deallocations were inserted) as the module docstring says;
    ``insert_deallocs(block)`` puts them back after the reordering (deallocs.py, which imports
    this module). True when the new order was kept."""
    if not _qualifies(graph):
        return False
    block = graph.body
    before = list(block)
    old = _makespan(graph, target)
    for op in before:
        if isinstance(op, DeallocOp):
            op.erase()
    list_order(block, target)
    insert_deallocs(block)
    if _makespan(graph, target) < old:
        return True
    for op in list(block):  # restore the program order and the deallocations as they were
        if isinstance(op, DeallocOp):
            op.erase()
        else:
            block.remove(op)
    for op in before:
        if isinstance(op, DeallocOp):
            fresh = DeallocOp([op.operand(0)])
            fresh.loc = op.loc
            op = fresh
        block.append(op)
    return False
