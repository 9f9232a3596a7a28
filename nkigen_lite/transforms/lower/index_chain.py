"""Lowering order: the chain computed from a runtime scalar goes right after the first pipeline.

A decode step reads a runtime position ``pos`` (a 0-d kernel input): clamped index arithmetic
on it and the row gathers it drives (``cos`` / ``sin`` at ``pos``, ``dynamic_slice``) depend on
nothing the kernel computes, yet they sit in program order just before RoPE, behind the
projections' stores and the per-head norms. The HW-DGE queues issue DMAs in program order, so
the chain's dependent DMAs (index stores, gathers, loads) were issued late and held the norms'
and RoPE's DMAs behind them. ``hoist_index_chain`` moves the *index chain* — every item that is
not a matmul, whose results are small (at most ``SMALL_ELEMENTS`` each), whose operands are
kernel inputs, operand-free items (constants, which move along) or chain items, and which reads
a small kernel input (at most ``SMALL_ELEMENTS`` elements) directly or through the chain — to
right before the first item after the kernel's first matmuls that is neither a matmul nor a
view: behind the first pipeline's weight loads (the chain's waiting DMAs would otherwise stall
them at the kernel's start), ahead of everything that follows. Moving an item earlier is legal:
its operands are kernel inputs or items moved with it, in their order, and its users come
later. Qwen3-0.6B decode step: 212.1 → 208.3 µs scheduled (``tests/workloads/test_qwen3_decode.py``).
"""

from __future__ import annotations

import math

from ...tensor import ops as T
from .groups import defined_by, item_operands, item_results

SMALL_ELEMENTS = 4096  # results and scalar inputs of the chain: index-sized, not data


def after_first_matmuls(items: list, quiet) -> int | None:
    """Index of the first item after the kernel's first matmuls that is neither a matmul nor a
    view (``quiet(item)``), or None."""
    first_mm = next((i for i, it in enumerate(items) if isinstance(it, T.MatmulOp)), None)
    if first_mm is None:
        return None
    return next(
        (
            i
            for i in range(first_mm + 1, len(items))
            if not (isinstance(items[i], T.MatmulOp) or quiet(items[i]))
        ),
        None,
    )


def _small(v) -> bool:
    return math.prod(v.type.shape) <= SMALL_ELEMENTS


def hoist_index_chain(items: list, quiet) -> list:
    """``items`` with the module docstring's index chain moved; ``quiet(item)``: a view item."""
    target = after_first_matmuls(items, quiet)
    if target is None:
        return items
    where = defined_by(items)
    chain: set[int] = set()
    pulled: set[int] = set()
    for i, it in enumerate(items):
        if i < target or isinstance(it, T.MatmulOp) or not all(_small(v) for v in item_results(it)):
            continue
        ok, scalar, need = True, False, []
        for v in item_operands(it):
            j = where.get(v)
            if j is None:  # a kernel input
                scalar |= v.defining_op is None and _small(v)
            elif j in chain:
                scalar = True
            elif not item_operands(items[j]):  # a constant: moves along
                need.append(j)
            else:
                ok = False
                break
        if ok and scalar:
            chain.add(i)
            pulled.update(j for j in need if j >= target)
    if not chain:
        return items
    moved = sorted(chain | pulled)
    rest = [it for i, it in enumerate(items) if i >= target and i not in chain and i not in pulled]
    return items[:target] + [items[i] for i in moved] + rest
