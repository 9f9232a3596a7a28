"""Data movement tensor ops (values move unchanged): transpose, reshape, broadcast_to, slice,
concat."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import INT, INT_TUPLE, Attr
from ...ir.errors import BuildError
from ...ir.traits import Pure
from .. import rules
from ..types import TensorType
from .base import TensorOp, tensor_types


def _slice(x, starts, stops, strides):
    """``x`` sliced by ``range(start, stop, stride)`` per dim."""
    idx = []
    for a, b, s in zip(starts, stops, strides):
        n = len(range(a, b, s))
        last = a + (n - 1) * s  # in bounds (verified) whenever n > 0
        idx.append(slice(a, last + s if last + s >= 0 else None, s) if n else slice(0, 0))
    return x[tuple(idx)]


class TransposeOp(TensorOp):
    """Permute axes: result dim i is operand dim perm[i]."""

    name = "tensor.transpose"
    traits = frozenset({Pure})
    attr_spec = (Attr("perm", INT_TUPLE),)

    reference = staticmethod(lambda x, perm: np.transpose(x, perm))
    numpy = "np.transpose(x, perm)"
    dtype_doc = "operand dtype"
    builder_names = ("transpose", "swapaxes")

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        (x,) = tensor_types(cls.name, types, 1)
        perm = attrs["perm"]
        if sorted(perm) != list(range(x.rank)):
            raise BuildError(f"{cls.name}: perm {list(perm)} is not a permutation of {x.rank} axes")
        return [x.with_shape(tuple(x.shape[p] for p in perm))]


class ReshapeOp(TensorOp):
    """Same elements in row-major order, new shape (no -1: the Builder resolves it)."""

    name = "tensor.reshape"
    traits = frozenset({Pure})
    attr_spec = (Attr("shape", INT_TUPLE),)

    reference = staticmethod(lambda x, shape: np.reshape(x, shape))
    numpy = "np.reshape"
    dtype_doc = "operand dtype"
    builder_names = ("reshape", "expand_dims", "squeeze")

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        (x,) = tensor_types(cls.name, types, 1)
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

    reference = staticmethod(lambda x, shape: np.broadcast_to(x, shape))
    numpy = "np.broadcast_to"
    dtype_doc = "operand dtype"
    builder_names = ("broadcast_to",)

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        (x,) = tensor_types(cls.name, types, 1)
        shape = tuple(attrs["shape"])
        if not rules.can_broadcast_to(x.shape, shape):
            raise BuildError(f"{cls.name}: cannot broadcast {x.shape} to {shape}")
        return [x.with_shape(shape)]


class SliceOp(TensorOp):
    """Static strided slice; per dim the kept indices are ``range(start, stop, stride)``."""

    name = "tensor.slice"
    traits = frozenset({Pure})
    attr_spec = (Attr("starts", INT_TUPLE), Attr("stops", INT_TUPLE), Attr("strides", INT_TUPLE))

    reference = staticmethod(_slice)
    numpy = "basic slicing x[start:stop:stride, ...]"
    dtype_doc = "operand dtype"
    builder_names = ("slice", "split")

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        (x,) = tensor_types(cls.name, types, 1)
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

    reference = staticmethod(lambda *xs, axis: np.concatenate(xs, axis=axis))
    numpy = "np.concatenate"
    dtype_doc = "promotion"
    builder_names = ("concat", "concatenate", "stack")

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        ts = tensor_types(cls.name, types)
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
            dtype = rules.binary_dtype(cls.name, lambda x, y: np.concatenate([x, y]), "arith", dtype, t.dtype)
        shape = list(ts[0].shape)
        shape[axis] = total
        return [TensorType(tuple(shape), dtype)]
