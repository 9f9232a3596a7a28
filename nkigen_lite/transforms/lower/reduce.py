"""Row-local reductions (over the trailing free dims of a tile) with ``tensor_reduce``;
reductions over partitions or loop dims are in reduce_acc.py."""

from __future__ import annotations

from ...ir.errors import BuildError
from ...ir.op import Op
from ...tensor import ops as T
from .frame import TileFrame
from .groups import domain_axes
from .limits import LoweringLimit
from .rules import tile_rule
from .tile_common import REDUCE_ALU


@tile_rule(T.ReduceOp)
def reduce(em: TileFrame, op: Op, inst) -> None:
    kind = op.attrs["kind"]
    alu = REDUCE_ALU.get(kind)
    if alu is None:
        raise BuildError(f"lowering: tensor.reduce kind {kind!r} is rewritten by decompose first")
    f_dims = list(em.plan.f_dims)
    pos = sorted(1 + f_dims.index(d) for d in domain_axes(op, len(em.plan.domain)) if d in f_dims)
    nfree = max(len(f_dims), 1)
    if pos != list(range(nfree - len(pos) + 1, nfree + 1)):
        raise LoweringLimit(
            f"lowering: {op.name} over axes {list(op.attrs['axes'])} is not over the "
            f"trailing free dims of its tile (free dims {f_dims}); tensor_reduce reduces "
            "trailing free axes",
            op,
        )
    v = op.result
    x = em.access(op.operand(0), inst)
    negate = op in em.fold.negated
    exact_in_f32 = kind in ("max", "min") and op.operand(0).type.dtype.itemsize <= 4
    em.new_tile(v, inst, "f32" if negate and exact_in_f32 else None)
    if not pos:
        return em.b.tensor_copy(dst=em.access(v, inst), src=x)
    em.b.tensor_reduce(dst=em.access(v, inst), op=alu, data=x, axis=tuple(pos), negate=negate, keepdims=True)
