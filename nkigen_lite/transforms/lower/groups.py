"""Fusion groups: partition a tensor graph into loop nests whose intermediates stay in SBUF.

Compute ops (elementwise, where, cast, keepdims reductions, iota) join the group of a producer
when their iteration domains are broadcast-compatible and the merge creates no cycle through
an op outside the group. Every other op (matmul, view ops, constants) is lowered by its own
family; values crossing a group boundary live in HBM.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.graph import Graph, ReturnOp, stable_topological_order
from ...ir.op import Op
from ...ir.value import Value
from ...tensor import ops as T

FUSIBLE = (T.UnaryOp, T.BinaryOp, T.WhereOp, T.CastOp, T.ReduceOp, T.IotaOp)


def is_fusible(op: Op) -> bool:
    """True for ops a fusion group can compute on tiles."""
    return isinstance(op, FUSIBLE) and not (isinstance(op, T.ReduceOp) and not op.attrs["keepdims"])


def op_domain(op: Op) -> tuple[int, ...]:
    """The iteration space of a fusible op: its operand's shape for reductions, else its result's."""
    if isinstance(op, T.ReduceOp):
        return op.operand(0).type.shape
    return op.result.type.shape


def merge_domains(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The common domain of two domains that broadcast together (right-aligned), else None."""
    r = max(len(a), len(b))
    a = (1,) * (r - len(a)) + tuple(a)
    b = (1,) * (r - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def domain_axes(op, rank: int) -> tuple[int, ...]:
    """A reduction's axes as dims of a domain of ``rank`` (operands are right-aligned)."""
    shift = rank - op.operand(0).type.rank
    return tuple(a + shift for a in op.attrs["axes"])


@dataclass(eq=False)
class FusionGroup:
    """Ops lowered together as one loop nest over ``domain``."""

    id: int
    domain: tuple[int, ...]
    ops: list[Op] = field(default_factory=list)

    def values(self) -> list[Value]:
        return [op.result for op in self.ops]


@dataclass
class Partition:
    """The graph's ops in lowering order: each item is a FusionGroup or a single non-fused op."""

    items: list[FusionGroup | Op]
    group_of: dict[Op, FusionGroup]

    def escaping(self, group: FusionGroup) -> list[Value]:
        """Values of ``group`` used outside it (or returned): they need an HBM home."""
        members = set(group.ops)
        outs = []
        for op in group.ops:
            r = op.result
            if any(u.op not in members for u in r.uses):
                outs.append(r)
        return outs


def _ancestors(op: Op, stop: set[Op]) -> set[Op]:
    seen: set[Op] = set()
    stack = [v.defining_op for v in op.operands]
    while stack:
        d = stack.pop()
        if d is None or d in seen or d in stop:
            continue
        seen.add(d)
        stack.extend(v.defining_op for v in d.operands)
    return seen


def _creates_cycle(members: set[Op], order: dict[Op, int]) -> bool:
    """True if some op outside ``members`` is both fed by and feeding the member set."""
    anc: set[Op] = set()
    for m in members:
        anc |= _ancestors(m, members)
    if not anc:
        return False
    tainted: set[Op] = set()
    last = max(order[m] for m in members)
    for op in sorted(anc | members, key=order.__getitem__):
        if order[op] > last:
            break
        if op in members:
            continue
        if any((v.defining_op in members or v.defining_op in tainted) for v in op.operands):
            tainted.add(op)
            if op in anc:
                return True
    return False


def _reduction_conflict(members: set[Op]) -> bool:
    """True if the members reduce over different sets of (right-aligned) dims: one tile layout
    cannot make both reductions run over its trailing free axes."""
    rank = max((len(op_domain(op)) for op in members), default=0)
    sets = {domain_axes(op, rank) for op in members if isinstance(op, T.ReduceOp)}
    return len(sets) > 1


def _reads_barrier(members: set[Op], is_barrier) -> bool:
    """True if some member reads the result of a member that must end its group."""
    for op in members:
        for v in op.operands:
            d = v.defining_op
            if d in members and is_barrier(d):
                return True
    return False


def form_groups(graph: Graph, is_barrier=lambda op: False) -> Partition:
    """Partition the (top-level, straight-line) tensor graph into fusion groups and other ops.

    ``is_barrier(op)`` marks ops whose result is only complete after the whole loop nest (a
    reduction accumulated across loops or partitions): no op reading it may join its group.
    """
    ops = [op for op in graph.body if not isinstance(op, ReturnOp)]
    order = {op: i for i, op in enumerate(ops)}
    group_of: dict[Op, FusionGroup] = {}
    groups: list[FusionGroup] = []
    for op in ops:
        if not is_fusible(op):
            continue
        dom = op_domain(op)
        candidates: list[FusionGroup] = []
        for v in op.operands:
            g = group_of.get(v.defining_op)
            if g is not None and g not in candidates:
                candidates.append(g)
        target = None
        for g in candidates:
            merged = merge_domains(g.domain, dom)
            if merged is None:
                continue
            if target is None:
                trial = set(g.ops) | {op}
                if (not _creates_cycle(trial, order) and not _reads_barrier(trial, is_barrier)
                        and not _reduction_conflict(trial)):
                    target, dom = g, merged
            else:
                both = merge_domains(target.domain, g.domain)
                if both is None:
                    continue
                trial = set(target.ops) | set(g.ops) | {op}
                if (not _creates_cycle(trial, order) and not _reads_barrier(trial, is_barrier)
                        and not _reduction_conflict(trial)):
                    for o in g.ops:
                        group_of[o] = target
                    target.ops = sorted(target.ops + g.ops, key=order.__getitem__)
                    target.domain = merge_domains(both, dom)
                    groups.remove(g)
        if target is None:
            target = FusionGroup(len(groups), dom)
            groups.append(target)
        else:
            target.domain = merge_domains(target.domain, dom)
        target.ops.append(op)
        group_of[op] = target
    _merge_siblings(groups, group_of, order, is_barrier)
    items = _condensed_toposort(ops, group_of, order)
    for i, g in enumerate(x for x in items if isinstance(x, FusionGroup)):
        g.id = i
    return Partition(items, group_of)


def _external_inputs(g: FusionGroup) -> set[Value]:
    members = set(g.ops)
    return {v for op in g.ops for v in op.operands if v.defining_op not in members}


def _merge_siblings(groups: list[FusionGroup], group_of: dict, order: dict, is_barrier) -> None:
    """Horizontal fusion: merge groups over the same domain that read a common input, so the
    input is loaded once (e.g. the two halves of RoPE)."""
    changed = True
    while changed:
        changed = False
        for i, a in enumerate(groups):
            ins_a = _external_inputs(a)
            for b in groups[i + 1:]:
                if a.domain != b.domain or not (ins_a & _external_inputs(b)):
                    continue
                both = set(a.ops) | set(b.ops)
                if (_creates_cycle(both, order) or _reads_barrier(both, is_barrier)
                        or _reduction_conflict(both)):
                    continue
                a.ops = sorted(a.ops + b.ops, key=order.__getitem__)
                for o in b.ops:
                    group_of[o] = a
                groups.remove(b)
                changed = True
                break
            if changed:
                break


def _condensed_toposort(ops, group_of, order) -> list[FusionGroup | Op]:
    """Groups and lone ops in a dependency order (ties broken by first op position)."""
    items: dict[int, FusionGroup | Op] = {}
    first: dict[int, int] = {}
    for op in ops:
        it = group_of.get(op, op)
        if id(it) not in items:
            items[id(it)] = it
            first[id(it)] = order[op]
    deps: dict[int, set[int]] = {k: set() for k in items}
    for op in ops:
        me = id(group_of.get(op, op))
        for v in op.operands:
            d = v.defining_op
            if d is not None and d in order and id(group_of.get(d, d)) != me:
                deps[me].add(id(group_of.get(d, d)))
    keys = list(items)
    result = stable_topological_order(keys, deps, first.__getitem__)
    if result is None:
        raise AssertionError("fusion groups form a cycle")
    return [items[k] for k in result]
