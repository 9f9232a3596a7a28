"""Resident rows: a fusion group whose row reductions accumulate over free-dim chunks (its rows
are wider than one tile's budget) and the next group, which reads its values, share their outer
loops (I dims, partition chunks). Per row tile the first group runs its chunk loop, keeping the
wide values the second one reads in full-row SBUF buffers (its reductions as columns); then the
second group runs its own chunk loop and reads them there instead of from HBM.

So residual + rmsnorm over 16,384 columns reads ``x`` and ``r`` once and writes ``h`` and ``y``
once (the residual row stays in SBUF between the sum of squares and the normalisation), and a
softmax's row statistics pass to the normalising loop without an HBM round trip.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.value import Value
from ...tensor import ops as T
from .context import LowerContext
from .group_emit import GroupEmitter
from .groups import FusionGroup, Partition
from .instance import loops_of
from .loopnest import run_loop_nest
from .plan import GroupPlan, RowTooWide


@dataclass
class RowPair:
    """Two groups emitted as one row sequence; ``passed`` values of ``first`` are read by
    ``second`` on chip, the ``wide`` ones through full-row buffers."""

    first: FusionGroup
    second: FusionGroup
    passed: list[Value]
    wide: list[Value]
    plans: tuple[GroupPlan, GroupPlan]
    outer: int  # loops shared by the two nests

    def stored(self, escaping: list[Value], outputs: set) -> list[Value]:
        """The first group's values that still go to HBM: outputs and values read elsewhere."""
        inside = set(self.first.ops) | set(self.second.ops)
        return [v for v in escaping if v in outputs or any(u.op not in inside for u in v.uses)]


def _external_reads(g: FusionGroup) -> set[Value]:
    members = set(g.ops)
    return {u for op in g.ops for u in op.operands if u.defining_op not in members}


def _emittable_after(part: Partition, first_index: int, first: FusionGroup, second: FusionGroup) -> bool:
    """True when everything ``second`` reads exists once ``first`` has run (so it can be
    emitted right after it)."""
    index = {id(it): k for k, it in enumerate(part.items)}
    members = set(first.ops) | set(second.ops)
    for u in _external_reads(second):
        d = u.defining_op
        if d is None or d in members or isinstance(d, T.FullOp):
            continue
        if index[id(part.group_of.get(d, d))] > first_index:
            return False
    return True


def _free_elements(v: Value, plan: GroupPlan) -> int:
    ext = (1,) * (len(plan.domain) - v.type.rank) + tuple(v.type.shape)
    n = 1
    for d in plan.f_dims:
        n *= ext[d]
    return n


def _same_rows(p1: GroupPlan, p2: GroupPlan) -> int | None:
    """Number of outer (non-F) loops the two plans share, or None when their row tiling
    differs or a free-chunk loop is not innermost."""
    if (p1.i_dims, p1.p_dims, p1.p_chunk, p1.f_dims) != (p2.i_dims, p2.p_dims, p2.p_chunk, p2.f_dims):
        return None
    if p1.split is not None or p2.split is not None or any(d not in p1.f_dims for d in p1.acc_dims):
        return None
    outer = []
    for loops in (loops_of(p1), loops_of(p2)):
        rows = [lp for lp in loops if lp.kind != "F"]
        if loops[: len(rows)] != rows:
            return None
        outer.append(rows)
    return len(outer[0]) if outer[0] == outer[1] else None


def find_row_pairs(part: Partition, plans: dict, row_local, plan_with_budget, budget: int) -> dict:
    """First group -> RowPair for the groups that can run as a row sequence.
    ``plan_with_budget(group, sbuf_budget)`` plans a group within a smaller SBUF budget."""
    pairs: dict[FusionGroup, RowPair] = {}
    taken: set[int] = set()
    items = part.items
    for k, g1 in enumerate(items):
        if not isinstance(g1, FusionGroup) or id(g1) in taken:
            continue
        if not any(isinstance(op, T.ReduceOp) and not row_local(op) for op in g1.ops):
            continue
        escaping = part.escaping(g1)
        readers = (
            it for it in items[k + 1 :] if isinstance(it, FusionGroup) and _external_reads(it) & set(escaping)
        )
        g2 = next(readers, None)
        if g2 is None or id(g2) in taken or g2.domain != g1.domain or not _emittable_after(part, k, g1, g2):
            continue
        reads = _external_reads(g2)
        passed = [v for v in escaping if v in reads]
        f_dims = plans[g1][0].f_dims
        wide = [v for v in passed if _free_elements(v, plans[g1][0]) > 1 and f_dims]
        row_bytes = sum(v.type.dtype.itemsize * _free_elements(v, plans[g1][0]) for v in wide)
        if row_bytes > budget // 2:
            continue
        try:
            p1 = plan_with_budget(g1, budget - row_bytes)
            p2 = plan_with_budget(g2, budget - row_bytes)
        except RowTooWide:
            continue
        outer = _same_rows(p1, p2)
        if outer is None:
            continue
        pairs[g1] = RowPair(g1, g2, passed, wide, (p1, p2), outer)
        taken |= {id(g1), id(g2)}
    return pairs


def _ordered(e1: GroupEmitter, e2: GroupEmitter, pair: RowPair) -> bool:
    """True when every passed value is complete before the second group reads it: wide values
    are written inside the first group's inner loops, accumulated ones finished where the two
    nests part, others computed at or outside the level the second group reads them."""
    split = pair.outer
    for v in pair.passed:
        l1, l2 = e1.levels[v], e2.levels.get(v, split)
        if v in pair.wide:
            ok = l1 >= split and l2 >= split
        elif v.defining_op in e1.accumulating:
            ok = l1 == split and l2 >= split
        else:
            ok = l1 <= split and l2 >= l1
        if not ok:
            return False
    return True


def emit_row_pair(ctx: LowerContext, pair: RowPair, part: Partition, outputs: set, row_local) -> None:
    """Emit the two groups of ``pair`` as one row sequence (see the module docstring), or one
    after the other through HBM when some passed value would not be ready in time."""
    p1, p2 = pair.plans
    pipe: dict = {}
    resident: dict = {}
    e1 = GroupEmitter(
        ctx,
        pair.first,
        pair.stored(part.escaping(pair.first), outputs),
        p1,
        row_local,
        pipe=pipe,
        publish=pair.passed,
        resident=resident,
        resident_values=pair.wide,
        resident_level=pair.outer,
    )
    e2 = GroupEmitter(
        ctx,
        pair.second,
        part.escaping(pair.second),
        p2,
        row_local,
        pipe=pipe,
        provided=pair.passed,
        resident=resident,
    )
    if not _ordered(e1, e2, pair):
        GroupEmitter(ctx, pair.first, part.escaping(pair.first), p1, row_local).run()
        GroupEmitter(ctx, pair.second, part.escaping(pair.second), p2, row_local).run()
        return
    run_loop_nest(ctx.b, e1.loops[: pair.outer], [e1, e2], shared=pair.outer)
