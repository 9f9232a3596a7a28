"""Backing memory of a simulated tensor, and the rounding rules for writing values into it."""

from __future__ import annotations

import math

import numpy as np

from ..ir.dtypes import DType, cast_array, uint8
from .enums import Buffer, psum


class Storage:
    """One allocation: flat data, a written-mask, and (PSUM) a matmul-initialised mask."""

    __slots__ = (
        "shape",
        "dtype",
        "buffer",
        "name",
        "data",
        "written",
        "mm_init",
        "run",
        "read_only",
        "__weakref__",
    )

    def __init__(self, shape: tuple[int, ...], dtype: DType, buffer: Buffer, name: str, run):
        size = math.prod(shape)
        self.shape = shape
        self.dtype = dtype
        self.buffer = buffer
        self.name = name
        self.data = np.zeros(size, dtype.np_dtype)
        self.written = np.zeros(size, bool)
        self.mm_init = np.zeros(size, bool) if buffer is psum else None
        self.run = run
        self.read_only = False

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def free_size(self) -> int:
        """Elements per partition of an on-chip tensor (product of the free dims)."""
        return math.prod(self.shape[1:])

    @property
    def bytes_per_partition(self) -> int:
        return self.free_size * self.dtype.itemsize

    def label(self) -> str:
        dims = "x".join(str(d) for d in self.shape) or "scalar"
        return f"{self.name or '<unnamed>'}: {self.buffer!r} {dims} {self.dtype.numpy_name}"


def as_fp32(raw: np.ndarray) -> np.ndarray:
    """Values as an engine sees them: converted to float32."""
    return np.asarray(raw).astype(np.float32)


def round_to(values, dtype: DType) -> np.ndarray:
    """Round computed values once into a dtype's storage (float->int: nearest even, saturating).

    bool_ is a uint8 on the chip [SHARED]: a value is rounded and saturated as for uint8 and
    the element is true when that byte is non-zero (0.25 and -7 give false, 0.75 and 300 true).
    """
    values = np.asarray(values)
    if dtype.is_bool:
        if values.dtype.kind in "iub":
            return np.clip(values.astype(np.int64), 0, 255) != 0
        return cast_array(values.astype(np.float32), uint8, float_to_int="rne") != 0
    if values.dtype.kind in "iub":
        if dtype.is_int:
            info = np.iinfo(dtype.np_dtype)
            return np.clip(values.astype(np.int64), info.min, info.max).astype(dtype.np_dtype)
        return cast_array(values.astype(np.float64).astype(np.float32), dtype)
    return cast_array(values.astype(np.float32), dtype, float_to_int="rne")


def convert(raw: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Move values between dtypes as DMA / copy engines do: bit-exact if equal, else via fp32."""
    if src is dst:
        return np.array(raw, dtype=dst.np_dtype)
    return round_to(as_fp32(raw), dst)


def to_bits(raw: np.ndarray, dtype: DType) -> np.ndarray:
    """Raw bit patterns of integer values as non-negative int64."""
    return np.asarray(raw).view(f"uint{dtype.bits}").astype(np.int64)


def from_bits(bits: np.ndarray, dtype: DType) -> np.ndarray:
    """Integer values whose bit patterns are the low bits of an int64 array."""
    mask = (1 << dtype.bits) - 1
    return (np.asarray(bits) & mask).astype(f"uint{dtype.bits}").view(dtype.np_dtype)
