"""Constant folding: pure ops whose operands are all constants become constants.

Values are computed by the tensor interpreter in its faithful mode: in the program's dtypes,
rounded on every write exactly as the interpreter (and the hardware) would round them when
the ops ran, so a folded constant is the value the unfolded ops produce — a Dekker split of
an f32 divisor stays an error-free f32 split, and ``cast(full(0.1, bf16), f32)`` holds
bf16(0.1). A uniform result becomes ``tensor.full`` holding that value (exact in its dtype, so
both interpreter modes read the same number). Other results become ``tensor.constant`` only
when the float64 evaluation gives the same values (``iota * 2`` folds, ``exp(iota)`` does not:
its values would be rounded), and only while that does not blow up the IR: a non-uniform
result is folded when it has at most ``MAX_FOLDED_ELEMENTS`` elements or no more than the
largest dense constant it was computed from (``iota(4096) * 2`` stays as it is).
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import FrozenArray
from ...ir.dtypes import cast_array
from ...ir.errors import NkError
from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.interpret import TensorInterpreter
from ..match import def_op, full, make, replace, uniform_scalar

SOURCES = (T.FullOp, T.ConstantOp, T.IotaOp)
MAX_FOLDED_ELEMENTS = 1024  # non-uniform folded constants up to this size are always fine
MAX_EVAL_ELEMENTS = 1 << 16  # operands + result elements evaluated to fold one op
_SHAPE_OPS = (T.BroadcastToOp, T.ReshapeOp, T.TransposeOp, T.SliceOp)
_ELEMENTWISE = (T.UnaryOp, T.BinaryOp, T.WhereOp, T.CastOp)


def _evaluate(op, operand_arrays, mode: str = "faithful"):
    it = TensorInterpreter(mode)
    rule = it.rule_for(type(op))
    if rule is None:
        return None
    try:
        return rule(it, op, operand_arrays)[0]
    except (NkError, ValueError, TypeError, ZeroDivisionError, OverflowError):
        return None


def _source_array(op, mode: str = "faithful") -> np.ndarray:
    return _evaluate(op, [], mode)


def _splat_array(op: T.FullOp) -> np.ndarray:
    """A one-element array holding what ``op`` stores in each element (rounded to its dtype)."""
    it = TensorInterpreter("faithful")
    dt = op.result.dtype
    return it.store(np.full((1,), op.attrs["value"], it.compute_type(dt)), dt)


class ConstantToFull(RewritePattern):
    """constant(dense c, c, …, c) → full(c)"""

    root = T.ConstantOp

    def match_and_rewrite(self, op, rw):
        v = op.result
        c = uniform_scalar(op.attrs["value"].array, v.dtype)
        if c is None:
            return False
        return replace(rw, op, full(rw, c, v.dtype, v.shape))


class ShapeOfSplat(RewritePattern):
    """broadcast_to / reshape / transpose / slice of full(c) → full(c) of the new shape"""

    root = _SHAPE_OPS

    def match_and_rewrite(self, op, rw):
        src = def_op(op.operand(0), T.FullOp)
        if src is None:
            return False
        r = op.result
        return replace(rw, op, full(rw, src.attrs["value"], r.dtype, r.shape))


class UnitIotaToFull(RewritePattern):
    """iota(shape, axis) with shape[axis] == 1 → full(0): every element is index 0, however
    the value is broadcast later (its dims of extent 1 carry no index)"""

    root = T.IotaOp

    def match_and_rewrite(self, op, rw):
        r = op.result
        if r.shape[op.attrs["axis"]] != 1:
            return False
        return replace(rw, op, full(rw, 0, r.dtype, r.shape))


class FoldElementwiseSplats(RewritePattern):
    """f(full(a), full(b), …) → full(f(a, b, …)) for elementwise f"""

    root = _ELEMENTWISE

    def match_and_rewrite(self, op, rw):
        srcs = [def_op(v, T.FullOp) for v in op.operands]
        if any(s is None for s in srcs):
            return False
        out = _evaluate(op, [_splat_array(s) for s in srcs])
        if out is None:
            return False
        r = op.result
        return replace(
            rw, op, full(rw, r.dtype.python_value(np.asarray(out).reshape(-1)[0]), r.dtype, r.shape)
        )


class FoldConstants(RewritePattern):
    """f(constants…) → constant(f(constants…)) for any pure op, within the size limits above"""

    root = T.TensorOp
    benefit = 0  # the cheaper splat folds above go first

    def match_and_rewrite(self, op, rw):
        if isinstance(op, SOURCES) or not op.is_pure or not op.operands or len(op.results) != 1:
            return False
        srcs = [v.defining_op for v in op.operands]
        if not all(isinstance(s, SOURCES) for s in srcs):
            return False
        r = op.result
        if sum(v.type.size for v in op.operands) + r.type.size > MAX_EVAL_ELEMENTS:
            return False
        out = _evaluate(op, [_source_array(s) for s in srcs])
        if out is None:
            return False
        out = np.asarray(out)
        c = uniform_scalar(out, r.dtype)
        if c is not None:
            return replace(rw, op, full(rw, c, r.dtype, r.shape))
        dense = max((s.result.type.size for s in srcs if isinstance(s, T.ConstantOp)), default=0)
        if r.type.size > max(MAX_FOLDED_ELEMENTS, dense):
            return False
        stored = cast_array(out, r.dtype)
        if r.dtype.is_float:
            exact = _evaluate(op, [_source_array(s, "float64") for s in srcs], "float64")
            if exact is None or not np.array_equal(stored.astype(np.float64), exact, equal_nan=True):
                return False  # the values are rounded: keep the ops (and the oracle's answer)
        value = FrozenArray(stored, r.dtype)
        return replace(rw, op, make(rw, T.ConstantOp, [], {"value": value}))


FOLDING_PATTERNS = (
    ConstantToFull(),
    ShapeOfSplat(),
    UnitIotaToFull(),
    FoldElementwiseSplats(),
    FoldConstants(),
)
