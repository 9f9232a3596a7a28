"""Canonicalization rules for shape ops: no-op removal, composition, implicit broadcasting."""

from __future__ import annotations

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.types import TensorType
from ..match import def_op, full, infer_type, make, replace, splat_value


class NoOpShape(RewritePattern):
    """transpose(x, identity) → x;  reshape(x, shape(x)) → x;  broadcast_to(x, shape(x)) → x;
    slice of the whole of x → x;  cast(x, dtype(x)) → x"""

    root = (T.TransposeOp, T.ReshapeOp, T.BroadcastToOp, T.SliceOp, T.CastOp)

    def match_and_rewrite(self, op, rw):
        x = op.operand(0)
        if x.type != op.result.type:
            return False
        if isinstance(op, T.TransposeOp) and tuple(op.attrs["perm"]) != tuple(range(x.ndim)):
            return False
        if isinstance(op, T.SliceOp) and any(
            (lo, st) != (0, 1) for lo, st in zip(op.attrs["starts"], op.attrs["strides"])
        ):
            return False
        return replace(rw, op, x)


class TransposeOfTranspose(RewritePattern):
    """transpose(transpose(x, p), q) → transpose(x, [p[i] for i in q])"""

    root = T.TransposeOp

    def match_and_rewrite(self, op, rw):
        inner = def_op(op.operand(0), T.TransposeOp)
        if inner is None:
            return False
        p, q = inner.attrs["perm"], op.attrs["perm"]
        perm = tuple(p[i] for i in q)
        return replace(rw, op, make(rw, T.TransposeOp, [inner.operand(0)], {"perm": perm}))


class ReshapeOfReshape(RewritePattern):
    """reshape(reshape(x, s1), s2) → reshape(x, s2)"""

    root = T.ReshapeOp

    def match_and_rewrite(self, op, rw):
        inner = def_op(op.operand(0), T.ReshapeOp)
        if inner is None:
            return False
        return replace(rw, op, make(rw, T.ReshapeOp, [inner.operand(0)], {"shape": op.attrs["shape"]}))


class BroadcastOfBroadcast(RewritePattern):
    """broadcast_to(broadcast_to(x, s1), s2) → broadcast_to(x, s2)"""

    root = T.BroadcastToOp

    def match_and_rewrite(self, op, rw):
        inner = def_op(op.operand(0), T.BroadcastToOp)
        if inner is None:
            return False
        return replace(rw, op, make(rw, T.BroadcastToOp, [inner.operand(0)], {"shape": op.attrs["shape"]}))


class AbsorbBroadcast(RewritePattern):
    """f(…, broadcast_to(y), …) → f(…, y, …) for elementwise f, and a splat operand shrinks to
    rank 0: f(…, full(c, shape), …) → f(…, full(c), …) — when the result type is unchanged."""

    root = (T.BinaryOp, T.WhereOp)

    def match_and_rewrite(self, op, rw):
        for i, v in enumerate(op.operands):
            src = def_op(v, T.BroadcastToOp)
            if src is not None:
                new_type = src.operand(0).type
            elif v.ndim > 0 and splat_value(v) is not None:
                new_type = TensorType((), v.dtype)
            else:
                continue
            types = [u.type for u in op.operands]
            types[i] = new_type
            if infer_type(type(op), types, dict(op.attrs)) != op.result.type:
                continue
            new = src.operand(0) if src is not None else full(rw, splat_value(v), v.dtype)
            operands = list(op.operands)
            operands[i] = new
            return replace(rw, op, make(rw, type(op), operands, dict(op.attrs)))
        return False


SHAPE_PATTERNS = (
    NoOpShape(),
    TransposeOfTranspose(),
    ReshapeOfReshape(),
    BroadcastOfBroadcast(),
    AbsorbBroadcast(),
)
