"""Shared vocabulary of the tile-level rules: tensor op -> NISA names, operand kinds
(immediate / tile access), engine choice, scratch tiles and fp32 columns."""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.op import Op
from ...ir.value import Value
from ...nki.types import Access
from ...tensor import ops as T
from .frame import TileFrame, immediate_of

ACT_FUNC = {
    T.ExpOp: "exp",
    T.LogOp: "log",
    T.SqrtOp: "sqrt",
    T.RsqrtOp: "rsqrt",
    T.ReciprocalOp: "reciprocal",
    T.TanhOp: "tanh",
    T.SigmoidOp: "sigmoid",
    T.SiluOp: "silu",
    T.GeluOp: "gelu",
    T.SoftplusOp: "softplus",
    T.ErfOp: "erf",
    T.SinOp: "sin",
    T.ArctanOp: "arctan",
    T.ReluOp: "relu",
    T.AbsOp: "abs",
    T.SignOp: "sign",
    T.SquareOp: "square",
    T.NegOp: "copy",
}
ALU = {
    T.AddOp: "add",
    T.SubOp: "subtract",
    T.MulOp: "multiply",
    T.MaximumOp: "maximum",
    T.MinimumOp: "minimum",
    T.PowOp: "power",
    T.EqualOp: "equal",
    T.NotEqualOp: "not_equal",
    T.LessOp: "less",
    T.LessEqualOp: "less_equal",
    T.GreaterOp: "greater",
    T.GreaterEqualOp: "greater_equal",
    T.LogicalAndOp: "logical_and",
    T.LogicalOrOp: "logical_or",
    T.LogicalXorOp: "logical_xor",
    T.BitwiseAndOp: "bitwise_and",
    T.BitwiseOrOp: "bitwise_or",
    T.BitwiseXorOp: "bitwise_xor",
}
REDUCE_ALU = {
    "sum": "add",
    "prod": "multiply",
    "max": "maximum",
    "min": "minimum",
    "any": "logical_or",
    "all": "logical_and",
}
FLOAT_EXACT_LIMIT = 8388608.0  # 2**23: float32 values at or above this magnitude are integers


@dataclass
class Imm:
    value: float | int


def arg(em: TileFrame, u: Value, inst, out_ext) -> Imm | Access:
    k = immediate_of(u)
    if k is not None:
        return Imm(k)
    return em.access(u, inst, out_ext)


def default_engine(op: Op, alu: str) -> str:
    dts = [v.type.dtype for v in op.operands] + [op.result.type.dtype]
    if alu == "power":
        return "gpsimd"
    if alu.startswith("bitwise") or alu.startswith("logical"):
        return "vector"
    if all(d.is_int or d.is_bool for d in dts[:-1]) and not dts[-1].is_float:
        return "gpsimd"  # exact integer arithmetic and comparisons
    return "vector"


def scratch(em, v, inst, dtype="f32") -> Access:
    return em.tile_access(em.scratch_tile(v, inst, dtype), inst, em.ext(v))


def fp32_column(em: TileFrame, v: Value, inst) -> Access:
    """``v``'s per-partition column as fp32 (activation scale / bias operands must be fp32)."""
    acc = em.access(v, inst)
    if em.tiles[v].type.dtype.name == "f32":
        return acc
    t = em.tile_access(em.scratch_tile(v, inst, "f32"), inst, em.ext(v))
    em.b.tensor_copy(dst=t, src=acc)
    return t
