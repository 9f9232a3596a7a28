"""The lowering's rule tables (transforms/lower/rules.py) are complete: every registered tensor
op class has a tile-level rule (inside fusion groups) or an item rule (outside them), unless
decompose expands it (composites, tensor.topk) or it is not lowered yet (collectives); what
fusion groups may hold is exactly what has a tile rule."""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite.ir import OP_REGISTRY
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.tensor import ops as T
from nkigen_lite.transforms.lower import driver  # noqa: F401  (registers every rule)
from nkigen_lite.transforms.lower.groups import FUSIBLE
from nkigen_lite.transforms.lower.rules import ITEM_RULES, TILE_RULES, removed_before_lowering, rule_for


def _lowered_classes():
    out = []
    for cls in OP_REGISTRY.values():
        if not issubclass(cls, T.TensorOp) or removed_before_lowering(cls):
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
    removed = [c for c in T.ALL_TENSOR_OPS if removed_before_lowering(c)]
    assert len(_lowered_classes()) >= len(T.ALL_TENSOR_OPS) - len(removed)


def test_fusion_groups_hold_exactly_the_ops_with_tile_rules():
    for cls in _lowered_classes():
        # a uniform constant is an immediate, or a one-op group when it is stored to HBM
        fusible = issubclass(cls, (*FUSIBLE, T.FullOp))
        assert fusible == (rule_for(TILE_RULES, cls) is not None), cls.name


def test_only_composite_and_not_yet_lowered_ops_skip_the_lowering():
    tensor_ops = [c for c in OP_REGISTRY.values() if issubclass(c, T.TensorOp)]
    skipped = {c.name for c in tensor_ops if removed_before_lowering(c)}
    assert "tensor.topk" not in skipped  # lowered natively when transforms/lower/topk.py takes it
    assert {"tensor.one_hot", "tensor.take_along_axis", "tensor.dynamic_slice"} <= skipped
    assert {"tensor.gather_rows", "tensor.scatter_rows"}.isdisjoint(skipped)
    assert {"tensor.add", "tensor.matmul", "tensor.reduce", "tensor.iota"}.isdisjoint(skipped)


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
