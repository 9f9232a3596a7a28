"""Widening casts of matmul operands happen on chip, never through an HBM copy.

``x.astype(np.float32) @ w`` with ``x`` bf16 / f16 would otherwise be a fusion group of its own
that stores an f32 copy of ``x`` to HBM for the matmul to read back (twice the bytes, and as
element-wise descriptors when the matmul wants it transposed). A cast from a 16-bit float to
f32 whose every use is, through view ops only, a matmul operand is instead an *operand cast*:
its value takes the HBM home of its operand (an f32 view of bf16 storage), and the matmul's
loads convert on the way — a casting DMA into the f32 staging tile, or a 16-bit load and
TensorE transpose whose PSUM → SBUF copy casts (matmul.py). Widening is exact, so the values
the Tensor engine sees are the cast's values bit for bit.

When both operands of a matmul are operand casts of the same 16-bit dtype the matmul runs in
that dtype (``narrow_matmul_dtypes``): the products of two 16-bit floats are exact in fp32 and
PSUM accumulates in fp32, so this computes what the f32 matmul of the widened values computes,
at the 16-bit rate.
"""

from __future__ import annotations

from ...ir.dtypes import get_dtype
from ...ir.op import Op
from ...ir.value import Value
from ...tensor import ops as T
from ..layout.ops import LayoutConvertOp
from .context import LowerContext
from .rules import item_rule

NARROW = ("bf16", "f16")
_VIEWS = (T.ReshapeOp, T.TransposeOp, T.BroadcastToOp, T.SliceOp, LayoutConvertOp)


def _only_matmul_operands(v: Value, depth: int = 0) -> bool:
    if depth > 8 or not v.uses:
        return False
    for u in v.uses:
        if isinstance(u.op, T.MatmulOp):
            continue
        if isinstance(u.op, _VIEWS) and _only_matmul_operands(u.op.result, depth + 1):
            continue
        return False
    return True


def is_operand_cast(op: Op) -> bool:
    """True for a 16-bit float -> f32 cast read only (through views) as matmul operands."""
    if not isinstance(op, T.CastOp):
        return False
    src, dst = op.operand(0).type.dtype, op.result.type.dtype
    return src.name in NARROW and dst.name == "f32" and _only_matmul_operands(op.result)


def _source_dtype(v: Value):
    """The 16-bit dtype ``v`` was widened from by an operand cast (through views), else None."""
    op = v.defining_op
    for _ in range(8):
        if op is None:
            return None
        if is_operand_cast(op):
            return op.operand(0).type.dtype
        if not isinstance(op, _VIEWS):
            return None
        op = op.operand(0).defining_op
    return None


def narrow_matmul_dtypes(op: T.MatmulOp):
    """(dtype, dtype) to stage both operands in when both are operand casts from the same
    16-bit float, else None."""
    a, b = (_source_dtype(v) for v in op.operands)
    if a is None or a is not b:
        return None
    return get_dtype(a.name), get_dtype(b.name)


@item_rule(T.CastOp)
def lower_operand_cast(ctx: LowerContext, op: T.CastOp) -> None:
    """An operand cast shares its operand's HBM home (the matmul's loads convert)."""
    if not is_operand_cast(op):
        raise AssertionError(f"lowering bug: {op.name} is lowered in a fusion group, not alone")
    ctx.homes[op.result] = ctx.home(op.operand(0))
