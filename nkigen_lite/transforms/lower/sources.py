"""Tiles generated on chip: ``iota`` with an affine pattern, and constants by ``memset``."""

from __future__ import annotations

from ...ir.op import Op
from ...tensor import ops as T
from .frame import TileFrame, immediate_of
from .limits import LoweringLimit
from .rules import tile_rule


@tile_rule(T.IotaOp)
def iota(em: TileFrame, op: Op, inst) -> None:
    v = op.result
    plan = em.plan
    ax = op.attrs["axis"] + len(plan.domain) - v.type.rank
    em.new_tile(v, inst)
    dst = em.access(v, inst)
    free = [d.size for d in dst.dims[1:]]
    steps = [0] * len(free)
    cm = 0
    offset = inst.offsets[ax]
    if ax in plan.f_dims:
        steps[plan.f_dims.index(ax)] = 1
    elif ax in plan.p_dims:
        others = [d for d in plan.p_dims if d != ax and inst.extents[d] > 1]
        if others:
            raise LoweringLimit(
                f"lowering: tensor.iota along axis {op.attrs['axis']} shares the "
                f"partitions with dims {others}; an iota's partition pattern is affine "
                "(one channel multiplier)",
                op,
            )
        cm = 1
    em.b.iota(dst=dst, pattern=[[s, n] for s, n in zip(steps, free)], offset=offset, channel_multiplier=cm)


@tile_rule(T.FullOp)
def full(em: TileFrame, op: Op, inst) -> None:
    em.new_tile(op.result, inst)
    em.b.memset(dst=em.access(op.result, inst), value=immediate_of(op.result))
