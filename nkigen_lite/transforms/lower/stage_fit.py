"""Loop pairing that keeps a loop's two-stage pipeline.

``interleave_loops`` (interleave.py) pairs a loop's iterations while the kernel's SBUF holds
both copies' tiles, up to ``ROUNDS`` times; ``pipeline_stages`` (stage_pipeline.py) runs after
it and software-pipelines the loop it left, with ``SLOTS`` buffers of every tile crossing its
stages, if that still fits. Each pairing doubles the tiles per slot, so a loop paired once too
often can lose its pipeline for want of SBUF. Here a pairing is refused when the loop as it is
would be pipelined within SBUF and PSUM but the paired loop would not.

Qwen3-0.6B layer at seq 2048 with all of O on chip (attention_out.py): the MLP prologue's row
loop starts beside 165,892 B per partition; paired twice its pipeline would peak at 239,668 B
(more than the 212,984 of a partition) and it stayed a loop of 4 interleaved row tiles
(1,736.7 µs on 3bc677e); paired once it is pipelined (1,693.1 µs).
"""

from __future__ import annotations

from ...ir.graph import Block
from ...nki.ops import ForiLoopOp
from ...nki.target import Target
from .interleave import _Unsupported, drop_ops
from .rotation import _peaks
from .stage_pipeline import _cut, _pipelined, _Plan, _qualifies, slot_tries


def pipeline_fits(loop: ForiLoopOp, sbuf: int, banks: int, target: Target) -> bool:
    """True when ``pipeline_stages`` would pipeline ``loop`` (starting beside ``sbuf`` bytes per
    partition and ``banks`` PSUM banks) within ``target``'s SBUF and PSUM."""
    if not _qualifies(loop):
        return False
    plan = _Plan(loop, _cut(list(loop.body)))
    for slots in slot_tries(loop.trip_count):
        try:
            ops = _pipelined(plan, slots)
        except _Unsupported:
            return False
        tmp = Block([], [])
        for o in ops:
            tmp.append(o)
        s, b = _peaks(tmp, {}, sbuf, banks)
        drop_ops(tmp)
        if s <= target.sbuf_bytes_per_partition and b <= target.psum_num_banks:
            return True
    return False


def keeps_pipeline(loop: ForiLoopOp, ops: list, sbuf: int, banks: int, target: Target) -> bool:
    """False when the pairing ``ops`` of ``loop`` (interleave.py) leaves a loop that cannot be
    pipelined although ``loop`` can (module docstring); True otherwise."""
    paired = [op for op in ops if isinstance(op, ForiLoopOp)]
    if len(paired) != 1 or pipeline_fits(paired[0], sbuf, banks, target):
        return True
    return not pipeline_fits(loop, sbuf, banks, target)
