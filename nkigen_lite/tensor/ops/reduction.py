"""Reductions and contractions: reduce, matmul."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import BOOL, INT, INT_TUPLE, Attr, EnumAttr
from ...ir.errors import BuildError
from ...ir.traits import Pure, Reduction
from .. import rules
from ..types import TensorType
from .base import Needs, TensorOp, tensor_types

REDUCE_KINDS = ("sum", "prod", "max", "min", "mean", "var", "std", "any", "all")
REDUCE_ALU = {
    "sum": "add",
    "prod": "multiply",
    "max": "maximum",
    "min": "minimum",
    "any": "logical_or",
    "all": "logical_and",
}
"""tensor.reduce kind -> the ALU reduction operator computing it (mean / var / std have none)."""


def _reduce(x, axes, kind, keepdims=False, ddof=0):
    fn = getattr(np, kind)
    if kind in ("var", "std"):
        return fn(x, axis=axes, keepdims=keepdims, ddof=ddof)
    return fn(x, axis=axes, keepdims=keepdims)


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
    reference = staticmethod(_reduce)
    numpy = "np.<kind>(x, axis, keepdims, ddof)"
    dtype_doc = "NumPy's for np.<kind>, narrowed; any/all → bool"
    builder_names = (
        "reduce",
        "sum",
        "prod",
        "max",
        "min",
        "mean",
        "var",
        "std",
        "any",
        "all",
        "amax",
        "amin",
    )
    needs = Needs("reduce", None)

    __slots__ = ()

    def capability(self) -> Needs:
        """The ALU reduction operator of ``kind``; none (decompose) without ``keepdims``."""
        alu = REDUCE_ALU.get(self.attrs["kind"]) if self.attrs["keepdims"] else None
        return Needs("reduce", alu)

    @classmethod
    def infer(cls, types, attrs):
        (x,) = tensor_types(cls.name, types, 1)
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
    reference = staticmethod(np.matmul)
    numpy = "np.matmul"
    dtype_doc = "promotion (bool rejected)"
    builder_names = ("matmul",)

    __slots__ = ()

    @classmethod
    def infer(cls, types, _attrs):
        a, b = tensor_types(cls.name, types, 2)
        if a.dtype.is_bool or b.dtype.is_bool:
            raise BuildError(f"{cls.name}: bool operands are not supported")
        shape = rules.matmul_shape(cls.name, a.shape, b.shape)
        return [TensorType(shape, rules.matmul_dtype(cls.name, a.dtype, b.dtype))]
