"""Layout rules of the indexed ops (tensor/ops/indexed.py). gather_rows and scatter_rows are
lowered on HBM homes (indirect DMA per 128 ids), so they constrain no roles; the other
indexed ops are rewritten by decompose, and one reaching layout is a pipeline error."""

from __future__ import annotations

from ...ir.errors import BuildError
from ...ir.op import Op
from ...tensor import ops as T
from .constraints import OpConstraints, is_elementwise, layout_rule


def _feeds_only(op: Op, ids) -> bool:
    """Whether ``ids`` and the element-wise / reshape chain computing it (back to its sources)
    are read by nothing but that chain and ``op``."""
    chain, todo = {id(op)}, [ids]
    values = []
    while todo:
        v = todo.pop()
        values.append(v)
        d = v.defining_op
        if d is not None and id(d) not in chain and (is_elementwise(d) or isinstance(d, T.ReshapeOp)):
            chain.add(id(d))
            todo.extend(u for u in d.operands if u.ndim >= 1)
    return all(id(user) in chain for v in values for user in v.users)


@layout_rule(T.GatherRowsOp, T.ScatterRowsOp)
def _hbm_only(op: Op, c: OpConstraints) -> None:
    """Read and written in HBM by DMA. 1-D ids are asked for the partitions when nothing else
    reads them or the index arithmetic computing them: the indirect DMA takes one id per
    partition, so that arithmetic's tile is the index column itself (no SBUF -> SBUF relayout,
    lower/onchip_rows.py), while another reader (a sum of the ids) keeps its own layout."""
    ids = op.operand(1)
    c.operands = [[] for _ in op.operands]
    if ids.ndim == 1 and _feeds_only(op, ids):
        c.operands[1] = [("req", 0, "P")]


@layout_rule(T.TakeAlongAxisOp, T.OneHotOp, T.DynamicSliceOp, T.DynamicUpdateSliceOp)
def _decomposed(op: Op, _c: OpConstraints) -> None:
    raise BuildError(
        f"layout: {op.name} is rewritten by decompose into gather/scatter rows; run decompose first"
    )
