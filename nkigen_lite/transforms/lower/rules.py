"""The lowering's rule tables, one entry per tensor op class (looked up along the class's MRO,
like the interpreters' and emitters' tables):

- ``TILE_RULES[op class](frame, op, instance)`` computes an op of a fusion group on tiles
  (elementwise.py, select.py, reduce.py, sources.py);
- ``ITEM_RULES[op class](ctx, op)`` lowers an op outside fusion groups: matmuls, views,
  concat, constants (driver.py, views.py);
- ``removed_before_lowering`` says which ops never reach it (decompose expands them, or they
  are not lowered yet).

``tests/lower/test_lower_rules.py`` checks that every tensor op class has one.
"""

from __future__ import annotations

from collections.abc import Callable

TILE_RULES: dict[type, Callable] = {}
ITEM_RULES: dict[type, Callable] = {}


def tile_rule(*op_classes: type):
    """Register the decorated function as the tile-level rule of ``op_classes``."""

    def register(fn):
        for cls in op_classes:
            TILE_RULES[cls] = fn
        return fn

    return register


def item_rule(*op_classes: type):
    """Register the decorated function as the rule lowering ``op_classes`` outside groups."""

    def register(fn):
        for cls in op_classes:
            ITEM_RULES[cls] = fn
        return fn

    return register


def removed_before_lowering(op_class: type) -> str | None:
    """Why ops of ``op_class`` never reach the lowering, or None when they do: composite ops
    are expanded by decompose (tensor.topk reaches it when topk.py takes the instance); the
    decomposed indexed ops are rewritten onto gather_rows / scatter_rows; collectives are not lowered yet."""
    needs = getattr(op_class, "needs", None)
    family = getattr(needs, "family", None)
    if family == "composite":
        return "decompose expands it"
    if family == "indexed" and needs.name is None:
        return "decompose rewrites it onto gather_rows / scatter_rows"
    if family == "collective" or getattr(op_class, "not_lowered", ""):
        return "not lowered yet"
    return None


def rule_for(table: dict[type, Callable], op_class: type) -> Callable | None:
    """The rule of ``op_class`` in ``table`` (its own, else its nearest base class's)."""
    for cls in op_class.__mro__:
        rule = table.get(cls)
        if rule is not None:
            return rule
    return None
