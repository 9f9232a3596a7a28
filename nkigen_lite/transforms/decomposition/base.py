"""Base of the decomposition patterns: target capabilities plus a tiny op emitter."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.dtypes import DType, float32
from ...ir.rewrite import RewritePattern, Rewriter
from ...ir.value import Value
from ...tensor import ops as T
from ..capabilities import Capabilities
from ..match import full, make

Scalar = bool | int | float


class Emitter:
    """Builds tensor ops at the rewriter's insertion point; Python scalars become rank-0
    constants of the other operand's dtype (NumPy's weak scalars)."""

    def __init__(self, rw: Rewriter):
        self.rw = rw

    def const(self, value: Scalar, dtype: DType) -> Value:
        return full(self.rw, value, dtype)

    def full(self, value: Scalar, dtype: DType, shape: Sequence[int]) -> Value:
        return full(self.rw, value, dtype, shape)

    def unary(self, short: str, x: Value) -> Value:
        return make(self.rw, T.UNARY_OPS[short], [x])

    def binary(self, short: str, a: Value | Scalar, b: Value | Scalar) -> Value:
        if not isinstance(a, Value):
            a = self.const(a, b.dtype)
        if not isinstance(b, Value):
            b = self.const(b, a.dtype)
        return make(self.rw, T.BINARY_OPS[short], [a, b])

    def __getattr__(self, short: str):
        if short in T.UNARY_OPS:
            return lambda x: self.unary(short, x)
        if short in T.BINARY_OPS:
            return lambda a, b: self.binary(short, a, b)
        raise AttributeError(short)

    def where(self, c: Value, a: Value | Scalar, b: Value | Scalar, dtype: DType | None = None) -> Value:
        """where(c, a, b); ``dtype`` types the scalars when neither a nor b is a Value."""
        if not isinstance(a, Value):
            a = self.const(a, b.dtype if isinstance(b, Value) else dtype)
        if not isinstance(b, Value):
            b = self.const(b, a.dtype)
        return make(self.rw, T.WhereOp, [c, a, b])

    def cast(self, x: Value, dtype: DType) -> Value:
        return x if x.dtype is dtype else make(self.rw, T.CastOp, [x], {"dtype": dtype})

    def reduce(self, x: Value, axes: Sequence[int], kind: str) -> Value:
        return make(self.rw, T.ReduceOp, [x], {"axes": tuple(axes), "kind": kind, "keepdims": True})

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        if tuple(shape) == x.shape:
            return x
        return make(self.rw, T.ReshapeOp, [x], {"shape": tuple(shape)})

    def broadcast_to(self, x: Value, shape: Sequence[int]) -> Value:
        if tuple(shape) == x.shape:
            return x
        return make(self.rw, T.BroadcastToOp, [x], {"shape": tuple(shape)})

    def slice_axis(self, x: Value, axis: int, start: int, stop: int) -> Value:
        starts = [0] * x.ndim
        stops = list(x.shape)
        starts[axis], stops[axis] = start, stop
        return make(
            self.rw,
            T.SliceOp,
            [x],
            {"starts": tuple(starts), "stops": tuple(stops), "strides": (1,) * x.ndim},
        )


def work_dtype(dtype: DType) -> DType:
    """The float dtype multi-op decompositions compute in: f32 for floats narrower than f32
    (and tf32), as the engines do; ``dtype`` itself otherwise."""
    return float32 if dtype.is_float else dtype


class DecompositionPattern(RewritePattern):
    """A rewrite that replaces an op the target lacks by ops it has."""

    def __init__(self, caps: Capabilities):
        self.caps = caps
