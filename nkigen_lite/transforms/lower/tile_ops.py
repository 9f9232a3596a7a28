"""Dispatch of the ops of a fusion group to their tile-level rules (one module per family:
elementwise.py, reduce.py, sources.py; the fold plan is fold.py)."""

from __future__ import annotations

from ...ir.errors import BuildError
from ...ir.op import Op
from ...tensor import ops as T
from . import elementwise, reduce, select, sources
from .frame import TileFrame


def emit_op(em: TileFrame, op: Op, inst) -> None:
    """Emit the instruction(s) computing ``op`` for one loop-nest instance."""
    if op in em.fold.act:
        return elementwise.activation(em, op, inst)
    rule = _RULES.get(type(op))
    if rule is None:
        for cls, r in _RULES.items():
            if isinstance(op, cls):
                rule = r
                break
    if rule is None:
        raise BuildError(
            f"lowering: no NKI rule for {op.name} inside a fusion group "
            "(div, floor_divide, mod, cos, mean, var and std are rewritten by the "
            "decompose pass)"
        )
    rule(em, op, inst)


_RULES = {
    T.BinaryOp: elementwise.binary,
    T.UnaryOp: elementwise.unary,
    T.CastOp: elementwise.cast,
    T.WhereOp: select.lower_where,
    T.ReduceOp: reduce.reduce,
    T.IotaOp: sources.iota,
    T.FullOp: sources.full,
}
