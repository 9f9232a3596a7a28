"""Layout rules of the indexed ops (tensor/ops/indexed.py). gather_rows and scatter_rows are
lowered on HBM homes (indirect DMA per 128 ids), so they constrain no roles; the other
indexed ops are rewritten by decompose, and one reaching layout is a pipeline error."""

from __future__ import annotations

from ...ir.errors import BuildError
from ...ir.op import Op
from ...tensor import ops as T
from .constraints import OpConstraints, layout_rule


@layout_rule(T.GatherRowsOp, T.ScatterRowsOp)
def _hbm_only(op: Op, c: OpConstraints) -> None:
    """Read and written in HBM by DMA; 1-D ids are asked (softly) for the partitions: the
    indirect DMA takes one id per partition, so index arithmetic computed in that layout is
    the index column itself (no SBUF -> SBUF relayout, lower/onchip_rows.py)."""
    ids = op.operand(1)
    c.operands = [[] for _ in op.operands]
    if ids.ndim == 1:
        c.operands[1] = [("req", 0, "P")]


@layout_rule(T.TakeAlongAxisOp, T.OneHotOp, T.DynamicSliceOp, T.DynamicUpdateSliceOp)
def _decomposed(op: Op, _c: OpConstraints) -> None:
    raise BuildError(
        f"layout: {op.name} is rewritten by decompose into gather/scatter rows; run decompose first"
    )
