"""Dispatch of the ops of a fusion group to their tile-level rules (``TILE_RULES`` in rules.py,
registered by elementwise.py, select.py, reduce.py and sources.py; the fold plan is fold.py)."""

from __future__ import annotations

from ...ir.errors import BuildError
from ...ir.op import Op
from . import elementwise, reduce, select, sources  # noqa: F401  (they register TILE_RULES)
from .affine_iota import emit_affine_iota
from .affine_mask import emit_mask
from .frame import TileFrame
from .moments import emit_moments
from .rules import TILE_RULES, rule_for


def emit_op(em: TileFrame, op: Op, inst) -> None:
    """Emit the instruction(s) computing ``op`` for one loop-nest instance."""
    if op in em.fold.act:
        return elementwise.activation(em, op, inst)
    if op in em.fold.masks:
        return emit_mask(em, op, inst)
    if op in em.fold.iotas:
        return emit_affine_iota(em, op, inst)
    if op in em.fold.moments:
        return emit_moments(em, op, inst)
    rule = rule_for(TILE_RULES, type(op))
    if rule is None:
        raise BuildError(
            f"lowering: no NKI rule for {op.name} inside a fusion group "
            "(div, floor_divide, mod, cos, mean, var and std are rewritten by the "
            "decompose pass)"
        )
    rule(em, op, inst)
