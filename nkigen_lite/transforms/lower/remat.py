"""Rematerialization: a value that one fusion group would store to HBM only for one later
group to read back is recomputed in that group instead, when it is a short elementwise function
of values that group can read for fewer bytes than the store and the reload cost.

Softmax over rows wider than SBUF is three groups (row max; exp and row sum; normalise): the
exponentials are recomputed from the input in the third group instead of going through HBM.
"""

from __future__ import annotations

from ...ir.graph import Graph
from ...ir.op import Op
from ...ir.value import Value
from ...tensor import ops as T
from .groups import FusionGroup, Partition

MAX_CONE = 8  # ops recomputed per value
CHEAP = (T.UnaryOp, T.BinaryOp, T.CastOp, T.WhereOp)


def _cone(v: Value, members: set[Op]) -> list[Op] | None:
    """The group ops computing ``v`` from values outside the group, or None when one of them is
    not a cheap elementwise op or there are too many. (Its leaves are then produced by other
    groups or the kernel's inputs, so the copy cannot fuse back into ``v``'s group.)"""
    seen: list[Op] = []
    stack = [v.defining_op]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        if not isinstance(op, CHEAP) or len(seen) >= MAX_CONE:
            return None
        seen.append(op)
        stack.extend(u.defining_op for u in op.operands if u.defining_op in members)
    return seen


def _leaves(cone: list[Op]) -> set[Value]:
    inside = set(cone)
    return {
        u
        for op in cone
        for u in op.operands
        if u.defining_op not in inside and not isinstance(u.defining_op, T.FullOp)
    }


def _reads(group: FusionGroup) -> set[Value]:
    members = set(group.ops)
    return {u for op in group.ops for u in op.operands if u.defining_op not in members}


def rematerialize(graph: Graph, part: Partition, done: set) -> bool:
    """Clone every profitable cone into its consumer group (see module docstring); True when
    the graph changed (the caller forms the groups again). ``done`` holds the values already
    rematerialized and their copies: each value is recomputed at most once, so the caller's
    loop ends. The clones of one call read values outside their producer group only, so they
    do not change what the other candidates of the same call read."""
    outputs = set(graph.outputs.values())
    order = {op: i for i, op in enumerate(graph.body)}
    changed = False
    for item in part.items:
        if not isinstance(item, FusionGroup):
            continue
        members = set(item.ops)
        for v in part.escaping(item):
            if v in outputs or v in done:
                continue
            users = [u.op for u in v.uses if u.op not in members]
            consumers = {id(part.group_of.get(op)) for op in users}
            if any(op not in part.group_of for op in users) or len(consumers) != 1:
                continue
            cone = _cone(v, members)
            if cone is None:
                continue
            target = part.group_of[users[0]]
            extra = _leaves(cone) - _reads(target)
            if sum(u.type.nbytes for u in extra) >= 2 * v.type.nbytes:
                continue
            done.add(v)
            done.update(_clone_into(graph, cone, v, users, order))
            changed = True
    return changed


def _clone_into(graph: Graph, cone: list[Op], v: Value, users: list[Op], order: dict) -> list[Value]:
    """Insert a copy of ``cone`` before the first of ``users``, make them read the copy and
    return the copied values."""
    anchor = min(users, key=order.__getitem__)
    copies: dict[Value, Value] = {}
    for op in sorted(cone, key=order.__getitem__):
        operands = [copies.get(u, u) for u in op.operands]
        new = type(op)(operands, dict(op.attrs), [r.type for r in op.results])
        graph.body.insert_before(anchor, new)
        new.result.name_hint = op.result.name_hint
        copies[op.result] = new.result
    for u in v.uses:
        if u.op in users:
            u.op.set_operand(u.index, copies[v])
    return list(copies.values())
