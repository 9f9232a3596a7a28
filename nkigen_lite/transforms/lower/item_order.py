"""Lowering order: projections of one computed value are lowered next to each other.

A row pipeline (pipeline.py) collects consecutive items. ``q = h @ Wq`` followed by the
per-head norm of ``q``, then ``k = h @ Wk``: the norm cannot join the pipeline, so ``h`` is
stored after ``q`` and loaded again by ``k`` and by ``v`` (three HBM passes over the
normalised hidden state of a decoder layer). ``hoist_projections`` moves every matmul whose
stationary operand A is computed by the kernel and whose B is a kernel input (or a view of one)
to right after A's producer, beside the other matmuls reading A; they then share one pipeline
and one staged Aᵀ, and ``h`` stays on chip. Moving such a matmul earlier is always legal: its
operands exist there, and its users still come after it. One linear pass.
"""

from __future__ import annotations

from ...tensor import ops as T
from .groups import FusionGroup
from .views import is_layout_convert


def _defined_by(items: list) -> dict:
    """value -> index of the item defining it."""
    where = {}
    for i, it in enumerate(items):
        for v in it.results if not isinstance(it, FusionGroup) else [op.result for op in it.ops]:
            where[v] = i
    return where


def hoist_projections(items: list, quiet) -> list:
    """``items`` reordered as the module docstring says. ``quiet(item)``: a view item (lowered
    anywhere after its operands). Block arguments (kernel inputs) and constants are weights."""
    where = _defined_by(items)
    followers: dict[int, list] = {}
    moved: set[int] = set()

    def weight_items(b) -> list | None:
        """The quiet items defining ``b`` from kernel inputs (in order), or None."""
        if b.defining_op is None or isinstance(b.defining_op, T.ConstantOp):
            return []
        i = where.get(b)
        if i is None or not quiet(items[i]):
            return None
        chain = []
        for u in items[i].operands:
            sub = weight_items(u)
            if sub is None:
                return None
            chain += sub
        return chain + [i]

    for i, it in enumerate(items):
        if not isinstance(it, T.MatmulOp):
            continue
        a, b = it.operands
        anchor = root = where.get(a)
        while root is not None and is_layout_convert(items[root]):
            root = where.get(items[root].operand(0))
        if root is None or not isinstance(items[root], (FusionGroup, T.MatmulOp)):
            continue  # A is not computed by the kernel
        between = items[anchor + 1 : i]
        if all(quiet(x) or isinstance(x, T.MatmulOp) or id(x) in moved for x in between):
            continue  # already beside its producer
        chain = weight_items(b)
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
