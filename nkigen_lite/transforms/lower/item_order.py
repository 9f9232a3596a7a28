"""Lowering order: projections of one computed value are lowered next to each other.

A row pipeline (pipeline.py) collects consecutive items. ``q = h @ Wq`` followed by the
per-head norm of ``q``, then ``k = h @ Wk``: the norm cannot join the pipeline, so ``h`` is
stored after ``q`` and loaded again by ``k`` and by ``v`` (three HBM passes over the
normalised hidden state of a decoder layer). ``hoist_projections`` moves every matmul whose
stationary operand A is computed by the kernel and whose B is a kernel input (or a view of one)
to right after A's producer, beside the other matmuls reading A; they then share one pipeline
and one staged Aᵀ, and ``h`` stays on chip. Moving such a matmul earlier is always legal: its
operands exist there, and its users still come after it. Linear in the number of items.
"""

from __future__ import annotations

from ...tensor import ops as T
from .groups import FusionGroup, defined_by
from .views import is_layout_convert


def _computed_anchor(a, items: list, where: dict) -> int | None:
    """Index of the item defining ``a`` when ``a`` (through layout conversions) is computed by a
    fusion group or a matmul, else None."""
    anchor = root = where.get(a)
    while root is not None and is_layout_convert(items[root]):
        root = where.get(items[root].operand(0))
    if root is None or not isinstance(items[root], (FusionGroup, T.MatmulOp)):
        return None
    return anchor


def _weight_items(b, items: list, where: dict, quiet) -> list | None:
    """Indices of the view items defining ``b`` from kernel inputs (in order), or None when
    ``b`` is computed."""
    if b.defining_op is None or isinstance(b.defining_op, T.ConstantOp):
        return []
    i = where.get(b)
    if i is None or not quiet(items[i]):
        return None
    chain = []
    for u in items[i].operands:
        sub = _weight_items(u, items, where, quiet)
        if sub is None:
            return None
        chain += sub
    return chain + [i]


def hoist_projections(items: list, quiet) -> list:
    """``items`` reordered as the module docstring says. ``quiet(item)``: a view item (lowered
    anywhere after its operands). Block arguments (kernel inputs) and constants are weights."""
    where = defined_by(items)
    blocking = [0]  # blocking[i]: items before i that end a row pipeline (neither views nor matmuls)
    for it in items:
        blocking.append(blocking[-1] + (not (quiet(it) or isinstance(it, T.MatmulOp))))
    followers: dict[int, list] = {}
    moved: set[int] = set()

    for i, it in enumerate(items):
        if not isinstance(it, T.MatmulOp):
            continue
        a, b = it.operands
        anchor = _computed_anchor(a, items, where)
        if anchor is None or blocking[i] == blocking[anchor + 1]:
            continue  # A is not computed, or M is beside its producer (only views, matmuls between)
        chain = _weight_items(b, items, where, quiet)
        if chain is None:
            continue
        todo = [j for j in chain if j > anchor and id(items[j]) not in moved] + [i]
        followers.setdefault(anchor, []).extend(todo)
        moved |= {id(items[j]) for j in todo}
    if not followers:
        return items
    out = []
    for i, it in enumerate(items):
        if id(it) in moved:
            continue
        out.append(it)
        out += [items[j] for j in followers.get(i, ())]
    return out
