"""The simulated ``nki.language`` (nl): tensor creation, buffers, dtypes, ranges, tile sizes, tokens."""

from __future__ import annotations

import numpy as np

from ..ir import dtypes as D
from ..ir.errors import BuildError
from . import limits
from .enums import Buffer, hbm, private_hbm, psum, sbuf, shared_hbm
from .errors import NkiSimError
from .grid import core
from .operators import (
    abs,
    abs_max,
    abs_min,
    add,
    arctan,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    bypass,
    copy,
    equal,
    erf,
    erf_dx,
    exp,
    gelu,
    gelu_apprx_sigmoid,
    gelu_apprx_tanh,
    gelu_dx,
    greater,
    greater_equal,
    left_shift,
    less,
    less_equal,
    log,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mish,
    multiply,
    not_equal,
    power,
    reciprocal,
    relu,
    right_shift,
    rsqrt,
    sigmoid,
    sign,
    silu,
    silu_dx,
    sin,
    softplus,
    sqrt,
    square,
    subtract,
    tanh,
)
from .runtime import current_run
from .storage import Storage, round_to
from .tensor import NkiTensor, compact_strides, is_int

float32, float16, bfloat16, tfloat32 = D.float32, D.float16, D.bfloat16, D.tfloat32
float8_e4m3, float8_e4m3fn, float8_e5m2 = D.float8_e4m3, D.float8_e4m3fn, D.float8_e5m2
int8, int16, int32, bool_ = D.int8, D.int16, D.int32, D.bool_
uint8, uint16, uint32 = D.uint8, D.uint16, D.uint32
DTYPES = (
    float32,
    float16,
    bfloat16,
    tfloat32,
    float8_e4m3,
    float8_e4m3fn,
    float8_e5m2,
    int8,
    int16,
    int32,
    uint8,
    uint16,
    uint32,
    bool_,
)


class tile_size:  # noqa: N801 - NKI's name
    """nl.tile_size: trn2 tile limits as plain ints."""

    pmax = limits.PARTITIONS
    psum_fmax = limits.PSUM_BANK_FMAX
    psum_bank_fmax = limits.PSUM_BANK_FMAX
    psum_bank_fmax_bytes = limits.PSUM_BANK_BYTES
    psum_num_banks = limits.PSUM_BANKS
    gemm_stationary_fmax = limits.GEMM_STATIONARY_FMAX
    gemm_moving_fmax = limits.GEMM_MOVING_FMAX
    sbuf_fmax_bytes = limits.SBUF_BYTES_PER_PARTITION
    total_available_sbuf_size = limits.SBUF_BYTES_PER_PARTITION


def resolve_dtype(dtype, where: str):
    """An NKI dtype from a dtype object, a NumPy dtype or a dtype name."""
    try:
        d = D.get_dtype(dtype)
    except BuildError as e:
        raise NkiSimError(f"{where}: {e}") from None
    if d not in DTYPES:
        raise NkiSimError(f"{where}: dtype {d.numpy_name} is not an NKI dtype on trn2")
    return d


def _check_shape(shape, where: str) -> tuple[int, ...]:
    if not isinstance(shape, (tuple, list)) or not shape or not all(is_int(n) and n > 0 for n in shape):
        raise NkiSimError(f"{where}: shape must be a non-empty tuple of positive ints, got {shape!r}")
    return tuple(int(n) for n in shape)


def ndarray(shape, dtype, buffer=sbuf, name="", address=None):
    """Allocate an uninitialised tensor (reading an element before writing it raises)."""
    where = "nl.ndarray"
    run = current_run(where)
    shape = _check_shape(shape, where)
    dtype = resolve_dtype(dtype, where)
    if not isinstance(buffer, Buffer):
        raise NkiSimError(
            f"{where}: buffer must be nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm, got "
            f"{buffer!r} (string buffer names are rejected) [MIG]"
        )
    if address is not None:
        raise NkiSimError(f"{where}: explicit address= placement is not simulated")
    if not isinstance(name, str):
        raise NkiSimError(f"{where}: name must be a str, got {name!r}")
    storage = Storage(shape, dtype, buffer, name, run)
    if buffer.on_chip:
        _check_on_chip(storage, where)
        run.allocate(storage, where)
    return NkiTensor(storage, 0, shape, compact_strides(shape))


def _check_on_chip(st: Storage, where: str) -> None:
    if len(st.shape) < 2:
        raise NkiSimError(f"{where}: on-chip tensor {st.label()} needs >= 2 dims (partition first) [LANG]")
    if st.shape[0] > limits.PARTITIONS:
        raise NkiSimError(
            f"{where}: {st.label()} has {st.shape[0]} partitions > {limits.PARTITIONS} [TILING]"
        )
    if st.buffer is psum and st.bytes_per_partition > limits.PSUM_BANK_BYTES:
        raise NkiSimError(
            f"{where}: PSUM tensor {st.label()} needs {st.bytes_per_partition} B per partition > one "
            f"{limits.PSUM_BANK_BYTES} B bank [TILING] [ARCH-T2]"
        )


def zeros(shape, dtype, buffer=sbuf, name=""):
    """Allocate a tensor filled with zeros."""
    t = ndarray(shape, dtype, buffer=buffer, name=name)
    t.write(round_to(np.zeros(t.shape, np.float32), t.dtype), "nl.zeros")
    run = t.storage.run
    if buffer.on_chip:
        run.count("vector")
    else:
        run.count_dma(t.size * t.dtype.itemsize)
    return t


def ds(start, size):
    """The slice start:start+size (nl.ds)."""
    if not is_int(start) or not is_int(size) or start < 0 or size <= 0:
        raise NkiSimError(f"nl.ds({start!r}, {size!r}): start must be an int >= 0 and size an int > 0")
    return slice(int(start), int(start) + int(size))


def _range(name):
    def make(*args):
        if not 1 <= len(args) <= 3 or not all(is_int(a) for a in args):
            raise NkiSimError(f"nl.{name}{args}: expects 1 to 3 int arguments like range()")
        return range(*(int(a) for a in args))

    make.__name__ = name
    make.__doc__ = f"nl.{name}: a plain Python range (unrolled at specialization in NKI 0.6)."
    return make


affine_range = _range("affine_range")
sequential_range = _range("sequential_range")
static_range = _range("static_range")


def _grid_axis(where: str, axis) -> None:
    if isinstance(axis, bool) or not isinstance(axis, int) or axis < 0:
        raise NkiSimError(f"{where}: the grid axis must be a non-negative int, got {axis!r}")


def program_id(axis=0):
    """This core's index in the launch grid (0, or 0 / 1 under ``kernel[2]``; grid.py)."""
    _grid_axis("nl.program_id", axis)
    return core()[0] if axis == 0 else 0


def num_programs(axes=0):
    """Number of cores the kernel is launched on (1, or 2 under ``kernel[2]``; grid.py)."""
    _grid_axis("nl.num_programs", axes)
    return core()[1] if axes == 0 else 1


__all__ = [
    "ndarray",
    "zeros",
    "ds",
    "affine_range",
    "sequential_range",
    "static_range",
    "tile_size",
    "program_id",
    "num_programs",
    "sbuf",
    "psum",
    "hbm",
    "private_hbm",
    "shared_hbm",
    "float32",
    "float16",
    "bfloat16",
    "tfloat32",
    "float8_e4m3",
    "float8_e4m3fn",
    "float8_e5m2",
    "int8",
    "int16",
    "int32",
    "uint8",
    "uint16",
    "uint32",
    "bool_",
    "add",
    "subtract",
    "multiply",
    "maximum",
    "minimum",
    "power",
    "abs_max",
    "abs_min",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
    "bypass",
    "copy",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "tanh",
    "sigmoid",
    "silu",
    "silu_dx",
    "gelu",
    "gelu_dx",
    "gelu_apprx_tanh",
    "gelu_apprx_sigmoid",
    "relu",
    "square",
    "erf",
    "erf_dx",
    "softplus",
    "mish",
    "sin",
    "arctan",
    "sign",
    "abs",
]
