"""Source tensor ops (no operands): constant, full, iota. Their references take the result
shape first."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import DENSE, INT, SCALAR, Attr
from ...ir.errors import BuildError
from ...ir.traits import ExplicitResultTypes, Pure
from ..types import TensorType
from .base import TensorOp, tensor_types


def _constant(_shape, value):
    return value.array


def _iota(shape, axis):
    idx = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return np.broadcast_to(idx, shape)


class ConstantOp(TensorOp):
    """A constant tensor given by its full contents."""

    name = "tensor.constant"
    traits = frozenset({Pure})
    attr_spec = (Attr("value", DENSE),)
    reference = staticmethod(_constant)
    numpy = "np.array"
    dtype_doc = "the array's"
    builder_names = ("constant",)

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        tensor_types(cls.name, types, 0)
        v = attrs["value"]
        return [TensorType(v.array.shape, v.dtype)]


class FullOp(TensorOp):
    """A tensor filled with one scalar; its shape and dtype are the result type's."""

    name = "tensor.full"
    traits = frozenset({Pure, ExplicitResultTypes})
    attr_spec = (Attr("value", SCALAR),)
    reference = staticmethod(np.full)
    numpy = "np.full"
    dtype_doc = "explicit result type"
    builder_names = ("full", "zeros", "ones")

    __slots__ = ()

    def verify(self):
        tensor_types(self.name, [r.type for r in self.results], 1)
        tensor_types(self.name, [v.type for v in self.operands], 0)
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
    reference = staticmethod(_iota)
    numpy = "np.arange broadcast along an axis"
    dtype_doc = "explicit result type (numeric)"
    builder_names = ("iota", "arange")

    __slots__ = ()

    def verify(self):
        (t,) = tensor_types(self.name, [r.type for r in self.results], 1)
        tensor_types(self.name, [v.type for v in self.operands], 0)
        if not 0 <= self.attrs["axis"] < max(t.rank, 1) or t.rank == 0:
            raise BuildError(f"{self.name}: axis {self.attrs['axis']} out of range for {t}")
        if t.dtype.is_bool:
            raise BuildError(f"{self.name}: result dtype must be numeric, got bool")
