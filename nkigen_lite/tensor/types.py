"""TensorType: a whole tensor of a static shape and dtype (``tensor<256x512xf32>``)."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import DType, get_dtype
from ..ir.errors import BuildError
from ..ir.types import ShapedType, format_shape, parse_shape_and_rest


class TensorType(ShapedType):
    """Static-shape tensor type; rank 0 prints as ``tensor<f32>``."""

    keyword = "tensor"
    __slots__ = ()

    def __init__(self, shape, dtype):
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
            raise BuildError(f"tensor shape must be a sequence of ints, got {shape!r}")
        shape = tuple(shape)
        bad = [d for d in shape if isinstance(d, bool) or not isinstance(d, (int, np.integer))]
        if bad:
            raise BuildError(f"tensor shape {shape} has a non-integer dimension {bad[0]!r}")
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise BuildError(f"tensor shape {shape} has a negative dimension")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", get_dtype(dtype))

    def __eq__(self, other):
        return isinstance(other, TensorType) and self.shape == other.shape and self.dtype is other.dtype

    def __hash__(self):
        return hash(("tensor", self.shape, self.dtype.name))

    def with_shape(self, shape) -> TensorType:
        return TensorType(shape, self.dtype)

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(self.shape, dtype)

    def body(self) -> str:
        return f"{format_shape(self.shape)}{self.dtype.name}"

    @classmethod
    def from_body(cls, body: str) -> TensorType:
        shape, rest = parse_shape_and_rest(body)
        return cls(shape, get_dtype(rest.strip()))
