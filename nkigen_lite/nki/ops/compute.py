"""Compute ops: mirrors of the NISA instructions, each writing a pre-allocated destination.

Elementwise ops pair elements by partition and then by row-major position within the
partition, so a [128, 4, 128] access can feed a [128, 512] destination (equal partitions and
equal elements per partition). Every op records the engine that runs it.
"""

from __future__ import annotations

from ...ir.attrs import BOOL, FLOAT, INT, INT_TUPLE, SCALAR, Attr, EnumAttr, OptionalOf, TupleOf
from ...ir.errors import BuildError
from ...ir.traits import Engine, SideEffect
from ..access import ACCESS, ACCESS_OR_SCALAR, AFFINE, OPT_ACCESS, OPT_ACCESS_OR_SCALAR, AffineSpec
from .alu import ACTIVATION_FUNCS, ALU_OPS, COMPARE_OPS, REDUCE_OPS
from .base import ENGINE_ATTR, NkiOp

PATTERN = TupleOf(INT_TUPLE)


class ComputeOp(NkiOp):
    """An NKI instruction run by a compute engine (recorded in its ``engine`` attribute)."""

    traits = frozenset({SideEffect, Engine})


def _check_pattern(op: NkiOp) -> None:
    pattern = op.attrs["pattern"]
    if not pattern:
        raise BuildError(f"{op.name}: pattern needs at least one [step, num] pair")
    for pair in pattern:
        if len(pair) != 2 or pair[1] <= 0:
            raise BuildError(f"{op.name}: pattern entries are [step, num] with num > 0, got {list(pair)}")


class TensorCopyOp(ComputeOp):
    """``nki.tensor_copy dst, src``: on-chip copy (PSUM -> SBUF, casts via fp32)."""

    name = "nki.tensor_copy"
    attr_spec = (Attr("dst", ACCESS), Attr("src", ACCESS), ENGINE_ATTR)
    writes = ("dst",)
    engines = ("vector", "scalar", "gpsimd")


class MemsetOp(ComputeOp):
    """``nki.memset dst {value}``: fill with a constant."""

    name = "nki.memset"
    attr_spec = (Attr("dst", ACCESS), Attr("value", SCALAR), ENGINE_ATTR)
    writes = ("dst",)
    engines = ("vector", "gpsimd")


class IotaOp(ComputeOp):
    """``nki.iota dst {pattern, offset, channel_multiplier}``:
    dst[c, k...] = offset + c*channel_multiplier + sum(step_j * k_j), in int32, then cast."""

    name = "nki.iota"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("pattern", PATTERN),
        Attr("offset", AFFINE, AffineSpec(0)),
        Attr("channel_multiplier", INT, 0),
        ENGINE_ATTR,
    )
    writes = ("dst",)
    engines = ("gpsimd",)

    def verify(self) -> None:
        super().verify()
        _check_pattern(self)


class MatmulOp(ComputeOp):
    """``nki.nc_matmul dst, stationary, moving {accumulate}``:
    dst[M, N] (+)= stationary[K, M]^T @ moving[K, N] with fp32 accumulation in PSUM."""

    name = "nki.nc_matmul"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("stationary", ACCESS),
        Attr("moving", ACCESS),
        Attr("accumulate", BOOL, False),
        ENGINE_ATTR,
    )
    writes = ("dst",)
    engines = ("tensor",)


class TransposeOp(ComputeOp):
    """``nki.nc_transpose dst, data``: swap the partition dim with the (flattened) free dims."""

    name = "nki.nc_transpose"
    attr_spec = (Attr("dst", ACCESS), Attr("data", ACCESS), ENGINE_ATTR)
    writes = ("dst",)
    engines = ("tensor", "vector")


class ActivationOp(ComputeOp):
    """``nki.activation dst, data {op, bias, scale, reduce_res}``: dst = op(data*scale + bias),
    optionally also reduce_res = sum over the free dims of the results (fp32)."""

    name = "nki.activation"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("data", ACCESS),
        Attr("op", EnumAttr(*ACTIVATION_FUNCS)),
        Attr("bias", OPT_ACCESS, None),
        Attr("scale", ACCESS_OR_SCALAR, 1.0),
        Attr("reduce_res", OPT_ACCESS, None),
        ENGINE_ATTR,
    )
    writes = ("dst", "reduce_res")
    engines = ("scalar",)


class TensorTensorOp(ComputeOp):
    """``nki.tensor_tensor dst, data1, data2 {op}``: elementwise binary ALU op."""

    name = "nki.tensor_tensor"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("data1", ACCESS),
        Attr("data2", ACCESS),
        Attr("op", EnumAttr(*ALU_OPS)),
        ENGINE_ATTR,
    )
    writes = ("dst",)
    engines = ("vector", "gpsimd")


class TensorScalarOp(ComputeOp):
    """``nki.tensor_scalar dst, data {op0, operand0, reverse0, op1, operand1, reverse1}``:
    dst = (data op0 operand0) op1 operand1; operands are immediates or (P, 1) accesses."""

    name = "nki.tensor_scalar"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("data", ACCESS),
        Attr("op0", EnumAttr(*ALU_OPS)),
        Attr("operand0", ACCESS_OR_SCALAR),
        Attr("reverse0", BOOL, False),
        Attr("op1", OptionalOf(EnumAttr(*ALU_OPS)), None),
        Attr("operand1", OPT_ACCESS_OR_SCALAR, None),
        Attr("reverse1", BOOL, False),
        ENGINE_ATTR,
    )
    writes = ("dst",)
    engines = ("vector", "scalar")  # GpSimd: documented only for rsqrt (not an ALU op here)

    def verify(self) -> None:
        super().verify()
        if (self.attrs["op1"] is None) != (self.attrs["operand1"] is None):
            raise BuildError("nki.tensor_scalar: op1 and operand1 come together")


class TensorReduceOp(ComputeOp):
    """``nki.tensor_reduce dst, data {op, axis, negate, keepdims}``: reduce trailing free axes."""

    name = "nki.tensor_reduce"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("data", ACCESS),
        Attr("op", EnumAttr(*REDUCE_OPS)),
        Attr("axis", INT_TUPLE),
        Attr("negate", BOOL, False),
        Attr("keepdims", BOOL, False),
        ENGINE_ATTR,
    )
    writes = ("dst",)
    engines = ("vector",)


class SelectOp(ComputeOp):
    """``nki.select dst, predicate, on_true {on_false, reverse_pred, reduce_res}``: NISA
    select_reduce, where(predicate != 0, on_true, on_false) (predicate == 0 with
    ``reverse_pred``); on_false is an fp32 immediate or a (P, 1) column. With ``reduce_res`` (a
    (P, 1) float column) also the max of each partition's selected values (reduce_op max, the
    accumulator reset first: reduce_cmd reset_reduce)."""

    name = "nki.select"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("predicate", ACCESS),
        Attr("on_true", ACCESS),
        Attr("on_false", ACCESS_OR_SCALAR),
        Attr("reverse_pred", BOOL, False),
        Attr("reduce_res", OPT_ACCESS, None),
        ENGINE_ATTR,
    )
    writes = ("dst", "reduce_res")
    engines = ("vector",)


class AffineSelectOp(ComputeOp):
    """``nki.affine_select dst, on_true_tile {pattern, channel_multiplier, offset, cmp_op,
    on_false_value}``: keep on_true where cmp_op(offset + c*channel_multiplier + sum(step*k), 0)."""

    name = "nki.affine_select"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("on_true_tile", ACCESS),
        Attr("pattern", PATTERN),
        Attr("channel_multiplier", INT),
        Attr("offset", AFFINE, AffineSpec(0)),
        Attr("cmp_op", EnumAttr(*COMPARE_OPS), "equal"),
        Attr("on_false_value", FLOAT),
        ENGINE_ATTR,
    )
    writes = ("dst",)
    engines = ("gpsimd",)

    def verify(self) -> None:
        super().verify()
        _check_pattern(self)


COMPUTE_OPS = (
    TensorCopyOp,
    MemsetOp,
    IotaOp,
    MatmulOp,
    TransposeOp,
    ActivationOp,
    TensorTensorOp,
    TensorScalarOp,
    TensorReduceOp,
    SelectOp,
    AffineSelectOp,
)
