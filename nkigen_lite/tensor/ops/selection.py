"""Selection and conversion tensor ops: where, cast."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import DTYPE, Attr
from ...ir.dtypes import bool_, cast_array
from ...ir.errors import BuildError
from ...ir.traits import Elementwise, Pure
from .. import rules
from ..types import TensorType
from .base import TensorOp, tensor_types


class WhereOp(TensorOp):
    """where(cond, a, b): a where cond is true else b; all three broadcast together."""

    name = "tensor.where"
    traits = frozenset({Pure, Elementwise})
    reference = staticmethod(np.where)
    numpy = "np.where"
    dtype_doc = "cond bool; promotion of a and b"
    builder_names = ("where",)

    __slots__ = ()

    @classmethod
    def infer(cls, types, _attrs):
        c, a, b = tensor_types(cls.name, types, 3)
        if c.dtype is not bool_:
            raise BuildError(f"{cls.name}: condition must be bool, got {c.dtype.numpy_name}")
        shape = rules.broadcast_shapes(cls.name, c.shape, a.shape, b.shape)
        dtype = rules.binary_dtype(cls.name, lambda x, y: np.where(True, x, y), "arith", a.dtype, b.dtype)
        return [TensorType(shape, dtype)]


class CastOp(TensorOp):
    """Convert to another dtype (floats to ints truncate toward zero and saturate)."""

    name = "tensor.cast"
    traits = frozenset({Pure, Elementwise})
    attr_spec = (Attr("dtype", DTYPE),)
    reference = staticmethod(lambda x, dtype: cast_array(x, dtype))
    numpy = "x.astype(dtype), saturating"
    dtype_doc = "the dtype attribute"
    builder_names = ("cast", "astype")

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        (x,) = tensor_types(cls.name, types, 1)
        return [x.with_dtype(attrs["dtype"])]
