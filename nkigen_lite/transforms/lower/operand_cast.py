"""Widening casts of matmul operands happen on chip, never through an HBM copy.

``x.astype(np.float32) @ w`` with ``x`` bf16 / f16 would otherwise be a fusion group of its own
that stores an f32 copy of ``x`` to HBM for the matmul to read back (twice the bytes, and as
element-wise descriptors when the matmul wants it transposed). A cast from a 16-bit float to
f32 whose every use is, through view ops only, a matmul operand is instead an *operand cast*:
its value takes the HBM home of its operand (an f32 view of bf16 storage), and the matmul's
loads convert on the way — a casting DMA into the f32 staging tile, or a 16-bit load and
TensorE transpose whose PSUM → SBUF copy casts (matmul.py). Widening is exact, so the values
the Tensor engine sees are the cast's values bit for bit.

The same holds for an integer matmul operand widened from a narrower integer or bool
(``a.astype(np.int32) @ b``, the int32 matmul WideIntMatmul forms for a narrow result or leaves
when the ranges keep it exact): a cast from int8 / uint8 / int16 / uint16 / bool to int32 or f32
read only by matmuls is an operand cast, its storage loaded by the matmul's casting DMAs (the
integer values are exact in fp32).

When both operands of a matmul are operand casts of the same 16-bit dtype the matmul runs in
that dtype (``narrow_matmul_dtypes``): the products of two 16-bit floats are exact in fp32 and
PSUM accumulates in fp32, so this computes what the f32 matmul of the widened values computes,
at the 16-bit rate. Operand casts from integers run in bf16 when both come from 8-bit integers
or bool (every value within [-255, 255] is a bf16 value), else in f32.
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
    """True for a 16-bit float -> f32 cast, or a narrower integer / bool -> int32 / f32 cast,
    read only (through views) as matmul operands."""
    if not isinstance(op, T.CastOp):
        return False
    src, dst = op.operand(0).type.dtype, op.result.type.dtype
    widens = src.name in NARROW and dst.name == "f32"
    widens = widens or (_narrow_int(src) and dst.name in ("i32", "f32"))
    return widens and _only_matmul_operands(op.result)


def _narrow_int(dt) -> bool:
    return dt.is_bool or (dt.is_int and dt.itemsize < 4)


def _source_dtype(v: Value):
    """The dtype ``v`` was widened from by an operand cast (through views), else None."""
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
    16-bit float (that dtype), or both from narrow integers (bf16 when both are 8-bit or bool,
    else f32), else None."""
    a, b = (_source_dtype(v) for v in op.operands)
    if a is None or b is None:
        return None
    if _narrow_int(a) and _narrow_int(b):
        return (get_dtype("bf16" if a.itemsize == b.itemsize == 1 else "f32"),) * 2
    if a is not b:
        return None
    return get_dtype(a.name), get_dtype(b.name)


@item_rule(T.CastOp)
def lower_operand_cast(ctx: LowerContext, op: T.CastOp) -> None:
    """An operand cast shares its operand's HBM home (the matmul's loads convert)."""
    if not is_operand_cast(op):
        raise AssertionError(f"lowering bug: {op.name} is lowered in a fusion group, not alone")
    ctx.homes[op.result] = ctx.home(op.operand(0))
