"""The lowering's rule tables (transforms/lower/rules.py) are complete: every registered tensor
op class has a tile-level rule (inside fusion groups) or an item rule (outside them), unless an
earlier pass removes it or the op says it is not lowered; what fusion groups may hold is
exactly what has a tile rule."""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite.ir import OP_REGISTRY
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.tensor import ops as T
from nkigen_lite.transforms.lower import driver  # noqa: F401  (registers every rule)
from nkigen_lite.transforms.lower.groups import FUSIBLE
from nkigen_lite.transforms.lower.rules import BEFORE_LOWERING, ITEM_RULES, TILE_RULES, rule_for


def _lowered_classes():
    out = []
    for cls in OP_REGISTRY.values():
        if not issubclass(cls, T.TensorOp) or getattr(cls, "not_lowered", ""):
            continue
        if any(b.__name__ in BEFORE_LOWERING for b in cls.__mro__):
            continue
        out.append(cls)
    return sorted(out, key=lambda c: c.name)


def test_every_tensor_op_class_has_a_lowering_rule():
    missing = [
        c.name
        for c in _lowered_classes()
        if rule_for(TILE_RULES, c) is None and rule_for(ITEM_RULES, c) is None
    ]
    assert missing == [], (
        f"{missing} have no lowering rule: register one with @tile_rule (computed on tiles in a "
        "fusion group) or @item_rule (lowered on its own) from nkigen_lite/transforms/lower/rules.py"
    )
    removed = [c for c in T.ALL_TENSOR_OPS if any(b.__name__ in BEFORE_LOWERING for b in c.__mro__)]
    assert len(_lowered_classes()) >= len(T.ALL_TENSOR_OPS) - len(removed)


def test_fusion_groups_hold_exactly_the_ops_with_tile_rules():
    for cls in _lowered_classes():
        # a uniform constant is an immediate, or a one-op group when it is stored to HBM
        fusible = issubclass(cls, (*FUSIBLE, T.FullOp))
        assert fusible == (rule_for(TILE_RULES, cls) is not None), cls.name


def test_every_base_named_as_removed_before_lowering_exists():
    bases = {b.__name__ for c in OP_REGISTRY.values() for b in c.__mro__}
    assert set(BEFORE_LOWERING) <= bases


def test_rule_lookup_follows_the_class_hierarchy():
    assert rule_for(TILE_RULES, T.AddOp) is TILE_RULES[T.BinaryOp]
    assert rule_for(ITEM_RULES, T.AddOp) is None
    assert rule_for(ITEM_RULES, T.MatmulOp) is not None


def test_an_op_without_an_item_rule_outside_a_group_is_one_clear_error(monkeypatch):
    b = nk.Builder("g")
    x = b.add_input("x", (4, 8), nk.float32)
    b.set_outputs({"y": b.transpose(x, (1, 0))})
    monkeypatch.delitem(ITEM_RULES, T.TransposeOp)
    with pytest.raises(BuildError, match=r"no NKI lowering for tensor\.transpose outside a fusion group"):
        nk.compile(b.graph)
