"""Lowering order: in-place row writes, and the chains that compute their rows, go first.

A decode step appends its new key and value rows to the K / V caches (``scatter_rows`` into
a cache input updated in place), and the attention then reads the whole caches from HBM: its
loads wait for those writes (RAW through HBM) and carry most of the step's bytes. In program
order the key's chain (per-head norm, RoPE, the row write) came after the query's (same
steps), and the value's write after both, so the caches' loads started only once the query's
chain of dependent small DMAs had also run, while the DMA engines idled.
``scatter_first`` moves every ``scatter_rows`` item, with every item it depends on that is not
yet lowered, to right before the first item after the kernel's first matmuls that is neither
a matmul nor a view (the point ``index_chain.py`` uses), keeping the relative order of the
moved items and of the others. The moved items are closed under their operands' producers, so
each still follows what it reads; the others keep their order after them. A write is not
moved when an item that stays and precedes it reads the buffer it updates (that item must
still see the old rows).
"""

from __future__ import annotations

from ...tensor import ops as T
from .groups import FusionGroup, defined_by, item_operands
from .index_chain import after_first_matmuls


def _root(v, where: dict, items: list):
    """The kernel input (or computed value) a chain of single-operand views starts from."""
    while (
        v in where
        and not isinstance(items[where[v]], FusionGroup)
        and len(item_operands(items[where[v]])) == 1
    ):
        it = items[where[v]]
        if not isinstance(it, (T.ReshapeOp, T.SliceOp, T.TransposeOp, T.BroadcastToOp)):
            break
        v = it.operand(0)
    return v


def scatter_first(items: list, quiet) -> list:
    """``items`` reordered as the module docstring says; ``quiet(item)``: a view item."""
    start = after_first_matmuls(items, quiet)
    if start is None:
        return items
    where = defined_by(items)
    moved: set[int] = set()
    for s in range(start, len(items)):
        if not isinstance(items[s], T.ScatterRowsOp):
            continue
        need, todo = set(), [s]
        while todo:
            i = todo.pop()
            if i in need or i in moved:
                continue
            need.add(i)
            todo += [where[v] for v in item_operands(items[i]) if v in where and where[v] >= start]
        base = _root(items[s].operand(0), where, items)
        stays = [i for i in range(start, s) if i not in need and i not in moved]
        if any(_root(v, where, items) is base for i in stays for v in item_operands(items[i])):
            continue  # an item staying before the write reads the rows it replaces
        moved |= need
    if not moved:
        return items
    front = [items[i] for i in sorted(moved)]
    rest = [it for i, it in enumerate(items) if i >= start and i not in moved]
    return items[:start] + front + rest
