"""Hardware legality of ``nki.tensor_tensor_scan`` (ops/scan.py), NKI 0.6 page
``nki.isa.tensor_tensor_scan``:

- Vector engine, SBUF / PSUM operands (the common compute rules);
- data0 and data1 pair with dst element by element (equal access shapes: stricter than the
  page's "same partitions and elements per partition") and are not both in PSUM;
- op0 and op1 are arithmetic ALU operators available on the target (the page: "any binary
  arithmetic operator");
- ``initial`` an fp32 number or an fp32 (P, 1) column on dst's partitions;
- dst fp32 (stricter: the page does not say whether the carried value is rounded to a narrower
  dst before the next step).
"""

from __future__ import annotations

from . import ops
from .ops.alu import op_kind
from .types import MemorySpace
from .verify_ops import (
    _alu_on_target,
    _column,
    _fp32_immediate,
    _same_access_shape,
    check_compute_common,
    rule,
)

PSUM = MemorySpace.PSUM


@rule(ops.TensorTensorScanOp)
def _tensor_tensor_scan(ctx, op) -> None:
    check_compute_common(ctx, op)
    _same_access_shape(ctx, op, "data0")
    _same_access_shape(ctx, op, "data1")
    if op.access("data0").space is PSUM and op.access("data1").space is PSUM:
        raise ctx.fail(op, "data0 and data1 are both in PSUM; at most one input may be")
    for name in ("op0", "op1"):
        alu = op.attrs[name]
        _alu_on_target(ctx, op, alu)
        if op_kind(alu) != "arith":
            raise ctx.fail(
                op, f"{name} {alu} is a {op_kind(alu)} operator; tensor_tensor_scan takes arithmetic ones"
            )
    if op.access("initial") is None:
        _fp32_immediate(ctx, op, "initial", op.attrs["initial"])
    else:
        _column(ctx, op, "initial", "dst", {"f32"})
    if op.access("dst").dtype.name != "f32":
        raise ctx.fail(
            op,
            f"dst is {op.access('dst').dtype}; tensor_tensor_scan writes fp32 here (whether the carried "
            "value is rounded to a narrower dst is undocumented)",
        )
