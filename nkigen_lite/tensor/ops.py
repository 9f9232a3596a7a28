"""Tensor dialect ops: whole-tensor SSA ops with NumPy semantics.

Attributes are canonical (non-negative sorted axes, resolved shapes, ``range()``-style slice
bounds); the Builder turns NumPy-style arguments into that form.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..ir.attrs import BOOL, DENSE, DTYPE, INT, INT_TUPLE, SCALAR, Attr, EnumAttr
from ..ir.dtypes import bool_
from ..ir.errors import BuildError
from ..ir.op import Op
from ..ir.traits import Commutative, Elementwise, ExplicitResultTypes, Pure, Reduction
from . import rules
from .types import TensorType


def _tensor_types(name: str, types, n: int | None = None) -> list[TensorType]:
    if n is not None and len(types) != n:
        raise BuildError(f"{name}: expected {n} operands, got {len(types)}")
    for i, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise BuildError(f"{name}: operand {i} must be a tensor, got {t}")
    return list(types)


class TensorOp(Op):
    """Base of tensor dialect ops."""


# ---- elementwise unary ------------------------------------------------------------------------

class UnaryOp(TensorOp):
    """Elementwise op of one tensor."""

    traits = frozenset({Pure, Elementwise})
    ufunc: ClassVar = None
    float_only: ClassVar[bool] = False

    @classmethod
    def infer(cls, types, attrs):
        (x,) = _tensor_types(cls.name, types, 1)
        return [x.with_dtype(rules.unary_dtype(cls.name, cls.ufunc, cls.float_only, x.dtype))]


def _relu_proxy(x):
    return np.maximum(x, np.zeros_like(x))


def _unary(short: str, ufunc=None, float_only: bool = False, doc: str = "") -> type[UnaryOp]:
    cls_name = "".join(p.capitalize() for p in short.split("_")) + "Op"
    return type(cls_name, (UnaryOp,), {
        "name": f"tensor.{short}", "ufunc": staticmethod(ufunc) if ufunc else None,
        "float_only": float_only, "__doc__": doc or f"Elementwise {short}.", "__slots__": (),
    })


ExpOp = _unary("exp", float_only=True, doc="e**x.")
LogOp = _unary("log", float_only=True, doc="Natural logarithm.")
SqrtOp = _unary("sqrt", float_only=True, doc="Square root.")
RsqrtOp = _unary("rsqrt", float_only=True, doc="1 / sqrt(x).")
ReciprocalOp = _unary("reciprocal", float_only=True, doc="1 / x (in floating point).")
TanhOp = _unary("tanh", float_only=True, doc="Hyperbolic tangent.")
SigmoidOp = _unary("sigmoid", float_only=True, doc="1 / (1 + exp(-x)).")
SiluOp = _unary("silu", float_only=True, doc="x * sigmoid(x).")
GeluOp = _unary("gelu", float_only=True, doc="x * Phi(x) (exact, erf-based).")
SoftplusOp = _unary("softplus", float_only=True, doc="log(1 + exp(x)).")
ErfOp = _unary("erf", float_only=True, doc="Gauss error function.")
SinOp = _unary("sin", float_only=True, doc="Sine.")
CosOp = _unary("cos", float_only=True, doc="Cosine.")
ArctanOp = _unary("arctan", float_only=True, doc="Inverse tangent.")
ReluOp = _unary("relu", _relu_proxy, doc="max(x, 0).")
AbsOp = _unary("abs", np.absolute, doc="Absolute value.")
SignOp = _unary("sign", np.sign, doc="-1, 0 or 1 (NaN for NaN).")
FloorOp = _unary("floor", np.floor, doc="Round toward -inf.")
CeilOp = _unary("ceil", np.ceil, doc="Round toward +inf.")
NegOp = _unary("neg", np.negative, doc="-x.")
SquareOp = _unary("square", np.square, doc="x * x.")
LogicalNotOp = _unary("logical_not", np.logical_not, doc="not x (bool result).")
BitwiseNotOp = _unary("bitwise_not", np.invert, doc="~x for integers and bools.")

UNARY_OPS: dict[str, type[UnaryOp]] = {
    c.name.split(".", 1)[1]: c for c in (
        ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp, SigmoidOp, SiluOp, GeluOp, SoftplusOp,
        ErfOp, SinOp, CosOp, ArctanOp, ReluOp, AbsOp, SignOp, FloorOp, CeilOp, NegOp, SquareOp,
        LogicalNotOp, BitwiseNotOp)
}


# ---- elementwise binary ------------------------------------------------------------------------

class BinaryOp(TensorOp):
    """Elementwise op of two tensors with NumPy broadcasting and dtype promotion."""

    traits = frozenset({Pure, Elementwise})
    ufunc: ClassVar = None
    category: ClassVar[str] = "arith"

    @classmethod
    def infer(cls, types, attrs):
        a, b = _tensor_types(cls.name, types, 2)
        shape = rules.broadcast_shapes(cls.name, a.shape, b.shape)
        dtype = rules.binary_dtype(cls.name, cls.ufunc, cls.category, a.dtype, b.dtype)
        return [TensorType(shape, dtype)]


def _binary(short: str, ufunc, category: str = "arith", commutative: bool = False,
            doc: str = "") -> type[BinaryOp]:
    cls_name = "".join(p.capitalize() for p in short.split("_")) + "Op"
    traits = frozenset({Pure, Elementwise} | ({Commutative} if commutative else set()))
    return type(cls_name, (BinaryOp,), {
        "name": f"tensor.{short}", "ufunc": staticmethod(ufunc), "category": category,
        "traits": traits, "__doc__": doc or f"Elementwise {short}.", "__slots__": (),
    })


AddOp = _binary("add", np.add, commutative=True, doc="a + b.")
SubOp = _binary("sub", np.subtract, doc="a - b.")
MulOp = _binary("mul", np.multiply, commutative=True, doc="a * b.")
DivOp = _binary("div", np.true_divide, doc="a / b (true division).")
PowOp = _binary("pow", np.power, doc="a ** b.")
MaximumOp = _binary("maximum", np.maximum, commutative=True, doc="Elementwise max (NaN wins).")
MinimumOp = _binary("minimum", np.minimum, commutative=True, doc="Elementwise min (NaN wins).")
FloorDivideOp = _binary("floor_divide", np.floor_divide, doc="floor(a / b), NumPy semantics.")
ModOp = _binary("mod", np.remainder, doc="a - floor(a / b) * b (sign of b), NumPy semantics.")
BitwiseAndOp = _binary("bitwise_and", np.bitwise_and, "bitwise", True)
BitwiseOrOp = _binary("bitwise_or", np.bitwise_or, "bitwise", True)
BitwiseXorOp = _binary("bitwise_xor", np.bitwise_xor, "bitwise", True)
LogicalAndOp = _binary("logical_and", np.logical_and, "logical", True)
LogicalOrOp = _binary("logical_or", np.logical_or, "logical", True)
LogicalXorOp = _binary("logical_xor", np.logical_xor, "logical", True)
EqualOp = _binary("equal", np.equal, "compare", True)
NotEqualOp = _binary("not_equal", np.not_equal, "compare", True)
LessOp = _binary("less", np.less, "compare")
LessEqualOp = _binary("less_equal", np.less_equal, "compare")
GreaterOp = _binary("greater", np.greater, "compare")
GreaterEqualOp = _binary("greater_equal", np.greater_equal, "compare")

BINARY_OPS: dict[str, type[BinaryOp]] = {
    c.name.split(".", 1)[1]: c for c in (
        AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, FloorDivideOp, ModOp,
        BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, LogicalAndOp, LogicalOrOp, LogicalXorOp,
        EqualOp, NotEqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp)
}


# ---- selection and conversion ------------------------------------------------------------------

class WhereOp(TensorOp):
    """where(cond, a, b): a where cond is true else b; all three broadcast together."""

    name = "tensor.where"
    traits = frozenset({Pure, Elementwise})

    @classmethod
    def infer(cls, types, attrs):
        c, a, b = _tensor_types(cls.name, types, 3)
        if c.dtype is not bool_:
            raise BuildError(f"{cls.name}: condition must be bool, got {c.dtype.numpy_name}")
        shape = rules.broadcast_shapes(cls.name, c.shape, a.shape, b.shape)
        dtype = rules.binary_dtype(cls.name, lambda x, y: np.where(True, x, y), "arith",
                                   a.dtype, b.dtype)
        return [TensorType(shape, dtype)]


class CastOp(TensorOp):
    """Convert to another dtype (floats to ints truncate toward zero and saturate)."""

    name = "tensor.cast"
    traits = frozenset({Pure, Elementwise})
    attr_spec = (Attr("dtype", DTYPE),)

    @classmethod
    def infer(cls, types, attrs):
        (x,) = _tensor_types(cls.name, types, 1)
        return [x.with_dtype(attrs["dtype"])]


# ---- sources -----------------------------------------------------------------------------------

class ConstantOp(TensorOp):
    """A constant tensor given by its full contents."""

    name = "tensor.constant"
    traits = frozenset({Pure})
    attr_spec = (Attr("value", DENSE),)

    @classmethod
    def infer(cls, types, attrs):
        _tensor_types(cls.name, types, 0)
        v = attrs["value"]
        return [TensorType(v.array.shape, v.dtype)]


class FullOp(TensorOp):
    """A tensor filled with one scalar; its shape and dtype are the result type's."""

    name = "tensor.full"
    traits = frozenset({Pure, ExplicitResultTypes})
    attr_spec = (Attr("value", SCALAR),)

    def verify(self):
        _tensor_types(self.name, [r.type for r in self.results], 1)
        _tensor_types(self.name, [v.type for v in self.operands], 0)
        t = self.results[0].type
        v = self.attrs["value"]
        if t.dtype.is_bool and not isinstance(v, bool):
            raise BuildError(f"{self.name}: value {v!r} is not a bool for a bool tensor")
        if t.dtype.is_int:
            if not isinstance(v, int) or isinstance(v, bool):
                raise BuildError(f"{self.name}: value {v!r} is not an integer for {t.dtype.numpy_name}")
            info = np.iinfo(t.dtype.np_dtype)
            if not info.min <= v <= info.max:
                raise BuildError(f"{self.name}: value {v} is out of range for {t.dtype.numpy_name}")
        if t.dtype.is_float and not isinstance(v, float):
            raise BuildError(f"{self.name}: value {v!r} is not a float for {t.dtype.numpy_name}")


class IotaOp(TensorOp):
    """Each element holds its index along ``axis`` (NumPy: arange broadcast along an axis)."""

    name = "tensor.iota"
    traits = frozenset({Pure, ExplicitResultTypes})
    attr_spec = (Attr("axis", INT),)

    def verify(self):
        (t,) = _tensor_types(self.name, [r.type for r in self.results], 1)
        _tensor_types(self.name, [v.type for v in self.operands], 0)
        if not 0 <= self.attrs["axis"] < max(t.rank, 1) or t.rank == 0:
            raise BuildError(f"{self.name}: axis {self.attrs['axis']} out of range for {t}")
        if t.dtype.is_bool:
            raise BuildError(f"{self.name}: result dtype must be numeric, got bool")


# ---- reductions and contractions ---------------------------------------------------------------

REDUCE_KINDS = ("sum", "prod", "max", "min", "mean", "var", "std", "any", "all")


class ReduceOp(TensorOp):
    """Reduce over ``axes`` with ``kind``; ``ddof`` applies to var/std (NumPy semantics)."""

    name = "tensor.reduce"
    traits = frozenset({Pure, Reduction})
    attr_spec = (
        Attr("axes", INT_TUPLE),
        Attr("kind", EnumAttr(*REDUCE_KINDS)),
        Attr("keepdims", BOOL, False),
        Attr("ddof", INT, 0),
    )

    @classmethod
    def infer(cls, types, attrs):
        (x,) = _tensor_types(cls.name, types, 1)
        axes, kind = attrs["axes"], attrs["kind"]
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < x.rank for a in axes):
            raise BuildError(f"{cls.name}: axes {list(axes)} must be sorted, unique and in [0, {x.rank})")
        if attrs["ddof"] and kind not in ("var", "std"):
            raise BuildError(f"{cls.name}: ddof only applies to var and std, not {kind}")
        if kind in ("max", "min") and any(x.shape[a] == 0 for a in axes):
            raise BuildError(f"{cls.name}: {kind} of an empty axis has no identity")
        if attrs["keepdims"]:
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        else:
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return [TensorType(shape, rules.reduce_dtype(cls.name, kind, x.dtype))]


class MatmulOp(TensorOp):
    """NumPy matmul: batched, broadcasting batch dims, with the 1-D operand rules."""

    name = "tensor.matmul"
    traits = frozenset({Pure})

    @classmethod
    def infer(cls, types, attrs):
        a, b = _tensor_types(cls.name, types, 2)
        if a.dtype.is_bool or b.dtype.is_bool:
            raise BuildError(f"{cls.name}: bool operands are not supported")
        shape = rules.matmul_shape(cls.name, a.shape, b.shape)
        return [TensorType(shape, rules.matmul_dtype(cls.name, a.dtype, b.dtype))]


# ---- data movement -----------------------------------------------------------------------------

class TransposeOp(TensorOp):
    """Permute axes: result dim i is operand dim perm[i]."""

    name = "tensor.transpose"
    traits = frozenset({Pure})
    attr_spec = (Attr("perm", INT_TUPLE),)

    @classmethod
    def infer(cls, types, attrs):
        (x,) = _tensor_types(cls.name, types, 1)
        perm = attrs["perm"]
        if sorted(perm) != list(range(x.rank)):
            raise BuildError(f"{cls.name}: perm {list(perm)} is not a permutation of {x.rank} axes")
        return [x.with_shape(tuple(x.shape[p] for p in perm))]


class ReshapeOp(TensorOp):
    """Same elements in row-major order, new shape (no -1: the Builder resolves it)."""

    name = "tensor.reshape"
    traits = frozenset({Pure})
    attr_spec = (Attr("shape", INT_TUPLE),)

    @classmethod
    def infer(cls, types, attrs):
        (x,) = _tensor_types(cls.name, types, 1)
        shape = attrs["shape"]
        if any(d < 0 for d in shape):
            raise BuildError(f"{cls.name}: shape {list(shape)} has a negative dim")
        new = x.with_shape(shape)
        if new.size != x.size:
            raise BuildError(
                f"{cls.name}: cannot reshape {x.shape} ({x.size} elements) to {tuple(shape)} "
                f"({new.size} elements)"
            )
        return [new]


class BroadcastToOp(TensorOp):
    """NumPy broadcast_to."""

    name = "tensor.broadcast_to"
    traits = frozenset({Pure})
    attr_spec = (Attr("shape", INT_TUPLE),)

    @classmethod
    def infer(cls, types, attrs):
        (x,) = _tensor_types(cls.name, types, 1)
        shape = tuple(attrs["shape"])
        if not rules.can_broadcast_to(x.shape, shape):
            raise BuildError(f"{cls.name}: cannot broadcast {x.shape} to {shape}")
        return [x.with_shape(shape)]


class SliceOp(TensorOp):
    """Static strided slice; per dim the kept indices are ``range(start, stop, stride)``."""

    name = "tensor.slice"
    traits = frozenset({Pure})
    attr_spec = (Attr("starts", INT_TUPLE), Attr("stops", INT_TUPLE), Attr("strides", INT_TUPLE))

    @classmethod
    def infer(cls, types, attrs):
        (x,) = _tensor_types(cls.name, types, 1)
        starts, stops, strides = attrs["starts"], attrs["stops"], attrs["strides"]
        if not len(starts) == len(stops) == len(strides) == x.rank:
            raise BuildError(f"{cls.name}: starts/stops/strides must each have {x.rank} entries")
        shape = []
        for d, (lo, hi, st, n) in enumerate(zip(starts, stops, strides, x.shape)):
            if st == 0:
                raise BuildError(f"{cls.name}: stride of dim {d} is zero")
            length = rules.slice_length(lo, hi, st)
            if length and not (0 <= lo < n and 0 <= lo + (length - 1) * st < n):
                raise BuildError(
                    f"{cls.name}: range({lo}, {hi}, {st}) is out of bounds for dim {d} of size {n}"
                )
            shape.append(length)
        return [x.with_shape(tuple(shape))]


class ConcatOp(TensorOp):
    """Join tensors along ``axis`` (dtypes promote as in NumPy)."""

    name = "tensor.concat"
    traits = frozenset({Pure})
    attr_spec = (Attr("axis", INT),)

    @classmethod
    def infer(cls, types, attrs):
        ts = _tensor_types(cls.name, types)
        if not ts:
            raise BuildError(f"{cls.name}: needs at least one operand")
        axis, rank = attrs["axis"], ts[0].rank
        if not 0 <= axis < rank:
            raise BuildError(f"{cls.name}: axis {axis} out of range for rank {rank}")
        dtype = ts[0].dtype
        total = 0
        for i, t in enumerate(ts):
            if t.rank != rank or any(
                d != e for k, (d, e) in enumerate(zip(t.shape, ts[0].shape)) if k != axis
            ):
                raise BuildError(
                    f"{cls.name}: operand {i} has shape {t.shape}, incompatible with "
                    f"{ts[0].shape} outside axis {axis}"
                )
            total += t.shape[axis]
            dtype = rules.binary_dtype(cls.name, lambda x, y: np.concatenate([x, y]), "arith",
                                       dtype, t.dtype)
        shape = list(ts[0].shape)
        shape[axis] = total
        return [TensorType(tuple(shape), dtype)]


ALL_TENSOR_OPS: tuple[type[TensorOp], ...] = tuple(UNARY_OPS.values()) + tuple(
    BINARY_OPS.values()
) + (WhereOp, CastOp, ConstantOp, FullOp, IotaOp, ReduceOp, MatmulOp, TransposeOp, ReshapeOp,
     BroadcastToOp, SliceOp, ConcatOp)
