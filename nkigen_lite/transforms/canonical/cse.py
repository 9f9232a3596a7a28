"""Common-subexpression elimination of identical pure ops within one block.

Two ops are identical when they have the same class, the same operands (as a multiset for
commutative ops), equal attributes and equal result types. Float attributes compare by their
bits, so ``full(nan)`` matches ``full(nan)`` while ``full(0.0)`` never matches ``full(-0.0)``.
Ops with regions are left alone, and nothing is shared across blocks.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable
from typing import Any

from ...ir.graph import Block, Graph
from ...ir.op import Op
from ...ir.traits import Commutative


def _attr_key(v: Any) -> Hashable:
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("i", v)
    if isinstance(v, float):
        return ("f", struct.pack("<d", v))
    if isinstance(v, tuple):
        return ("t",) + tuple(_attr_key(x) for x in v)
    return (type(v).__name__, v)


def op_key(op: Op) -> Hashable | None:
    """The identity key of a pure op for CSE, or None when it must not be merged."""
    if not op.is_pure or op.is_terminator or op.regions:
        return None
    # Values built by a Builder overload ``==``, so keys hold their ids (all are alive here).
    ids = tuple(id(v) for v in op.operands)
    key_ops = tuple(sorted(ids)) if op.has_trait(Commutative) else ids
    attrs = tuple((k, _attr_key(v)) for k, v in sorted(op.attrs.items()))
    return (type(op), key_ops, attrs, tuple(r.type for r in op.results))


def cse_block(block: Block) -> int:
    """Merge identical pure ops of ``block`` (and, separately, of nested blocks) into the first."""
    seen: dict[Hashable, Op] = {}
    merged = 0
    for op in block:
        for region in op.regions:
            for inner in region.blocks:
                merged += cse_block(inner)
        key = op_key(op)
        if key is None:
            continue
        first = seen.get(key)
        if first is None:
            seen[key] = op
            continue
        for old, new in zip(op.results, first.results):
            old.replace_all_uses_with(new)
        op.erase()
        merged += 1
    return merged


def cse(graph: Graph) -> int:
    """CSE over the whole graph; returns the number of ops removed."""
    return cse_block(graph.body)
