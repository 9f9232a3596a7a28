"""A straight-line kernel that starts with loads of broadcast rows (LayerNorm's ``w`` and ``b``,
one partition each) issues its first row tile's load first, when that shortens the kernel.

Every load of such a kernel can issue at time 0, two HW-DGE queues take them in program order
(600 ns each) and the first byte arrives 1.3 µs after the issue (docs/costmodel.md). The
lowering loads the weight rows first (they are loaded once, before the row tiles), so the first
row tile, whose statistics start every engine's work, queues behind them: LayerNorm 512×1024's
first tile arrives 600 ns later than it could. ``lead_with_row_tile`` moves the first load of a
tile over (nearly) all partitions, with its allocation, ahead of the one-partition loads before
it — legal because nothing before it touches its tile and kernel inputs are only read
(``straight_order._qualifies``). The move is kept only when the finished kernel is scheduled
shorter with it (straight_variants.py).
"""

from __future__ import annotations

from ...nki.ops import AllocOp, DmaCopyOp
from ...nki.types import HbmType, TileType


def _loads(block) -> list:
    return [
        op
        for op in block
        if isinstance(op, DmaCopyOp)
        and isinstance(op.access("src").tensor.type, HbmType)
        and isinstance(op.access("dst").tensor.type, TileType)
    ]


def lead_row_tile(block, target) -> bool:
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
    if not isinstance(alloc, AllocOp) or any(
        v is tile for op in before if op is not alloc for v in op.operands
    ):
        return False
    anchor = first
    if alloc in before:
        block.remove(alloc)
        block.insert_before(first, alloc)
    block.remove(lead)
    block.insert_before(anchor, lead)
    return True
