"""A straight-line kernel that starts with loads of broadcast rows (LayerNorm's ``w`` and ``b``,
one partition each) issues its first row tile's load first, when that shortens the kernel.

Every load of such a kernel can issue at time 0, two HW-DGE queues take them in program order
(600 ns each) and the first byte arrives 1.3 µs after the issue (docs/costmodel.md). The
lowering loads the weight rows first (they are loaded once, before the row tiles), so the first
row tile, whose statistics start every engine's work, queues behind them: LayerNorm 512×1024's
first tile arrives 600 ns later than it could. ``lead_with_row_tile`` moves the first load of a
tile over (nearly) all partitions, with its allocation, ahead of the one-partition loads before
it — legal because nothing before it touches its tile and kernel inputs are only read
(``straight_order._qualifies``). The move is kept only when the kernel scheduled after the
remaining steps of the ``deallocs`` pass (``finish``: tail split, list order, engine balance)
is shorter than without it; that is decided on a clone of the graph, then repeated on the graph.
"""

from __future__ import annotations

from ...nki.ops import AllocOp, DmaCopyOp
from ...nki.types import HbmType, TileType
from .straight_order import _qualifies

MAX_INSTRUCTIONS = 400  # straight-line kernels this small are finished twice to compare


def _loads(block) -> list:
    return [
        op
        for op in block
        if isinstance(op, DmaCopyOp)
        and isinstance(op.access("src").tensor.type, HbmType)
        and isinstance(op.access("dst").tensor.type, TileType)
    ]


def _move(block, target) -> bool:
    """Move the first row-tile load ahead of the one-partition loads issued before it."""
    ops = list(block)
    loads = _loads(block)
    if not loads or loads[0].access("dst").dims[0].size != 1:
        return False
    half = target.num_partitions // 2
    lead = next((op for op in loads if op.access("dst").dims[0].size >= half), None)
    if lead is None:
        return False
    first, at = loads[0], ops.index(lead)
    before = ops[ops.index(first) : at]
    if any(isinstance(op, DmaCopyOp) and op.access("dst").dims[0].size != 1 for op in before):
        return False  # only weight-row loads (and instructions not touching the tile) are passed
    tile = lead.access("dst").tensor
    alloc = tile.defining_op
    if not isinstance(alloc, AllocOp) or any(v is tile for op in before if op is not alloc for v in op.operands):
        return False
    anchor = first
    if alloc in before:
        block.remove(alloc)
        block.insert_before(first, alloc)
    block.remove(lead)
    block.insert_before(anchor, lead)
    return True


def lead_with_row_tile(graph, target, finish, makespan) -> bool:
    """Apply the move (module docstring) when ``finish(graph)`` (the rest of the pass) then gives
    a shorter ``makespan(graph)``; ``finish`` runs on ``graph`` either way. True when moved."""
    n = sum(1 for _ in graph.body)
    if n > MAX_INSTRUCTIONS or not _qualifies(graph):
        finish(graph)
        return False
    trial = graph.clone()
    if not _move(trial.body, target):
        finish(graph)
        return False
    plain = graph.clone()
    finish(plain)
    finish(trial)
    moved = makespan(trial) < makespan(plain) - 1e-6
    if moved:
        _move(graph.body, target)
    finish(graph)
    return moved
