"""Tensor-engine instructions: nc_matmul (PSUM fp32 (+)= stationary.T @ moving) and nc_transpose."""

from __future__ import annotations

import numpy as np

from . import enums as E
from . import limits
from .enums import psum, sbuf
from .errors import NkiSimError
from .operands import Instruction, begin, pick_engine, tile_arg
from .storage import as_fp32, convert

_MATMUL_INPUTS = ("float8_e4m3", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32")
_WIDE = ("tfloat32", "float32")


def nc_matmul(
    dst,
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    accumulate=None,
    tile_position=(),
    tile_size=(),
    perf_mode=E.matmul_perf_mode.none,
    name="",
):
    """dst[M, N] (+)= stationary[K, M].T @ moving[K, N]; K on partitions, fp32 accumulation in PSUM.

    accumulate=False overwrites, True adds (dst must hold a matmul result), None overwrites
    elements no matmul has written yet and adds onto the others [ISA] §2.2.
    """
    where = "nisa.nc_matmul"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    st = tile_arg(stationary, where, "stationary")
    mv = tile_arg(moving, where, "moving")
    if isinstance(accumulate, np.bool_):
        accumulate = bool(accumulate)
    _check_matmul_options(where, is_transpose, tile_position, tile_size, perf_mode, accumulate)
    for role, t in (("dst", dst), ("stationary", st), ("moving", mv)):
        if t.ndim != 2:  # the nc_matmul page specifies [K, M] / [K, N] / [M, N] only [ISA]
            raise NkiSimError(
                f"{where}: {role} {t.describe()} must be a 2-D tile view (use .ap to "
                "collapse free dims) [ISA]"
            )
    _check_matmul_operands(where, dst, st, mv)
    k, m, n = st.shape[0], st.free_size, mv.free_size
    s_vals = as_fp32(st.read(f"{where} stationary")).reshape(k, m)
    m_vals = as_fp32(mv.read(f"{where} moving")).reshape(k, n)
    for flag, role, vals in (
        (is_stationary_onezero, "stationary", s_vals),
        (is_moving_onezero, "moving", m_vals),
    ):
        if flag and not np.isin(vals, (0.0, 1.0)).all():
            raise NkiSimError(f"{where}: is_{role}_onezero=True but {role} holds values other than 0/1")
    product = (s_vals.astype(np.float64).T @ m_vals.astype(np.float64)).astype(np.float32)
    idx = dst.flat_index().reshape(m, n)
    initialised = dst.storage.mm_init[idx]
    if accumulate is True and not initialised.all():
        first = tuple(int(i) for i in np.argwhere(~initialised)[0])
        raise NkiSimError(
            f"{where}: accumulate=True onto element {first} of {dst.describe()}, which no matmul has "
            "initialised (undefined on hardware) [ISA]"
        )
    if accumulate is False:
        result = product
    else:
        old = dst.storage.data[idx].astype(np.float32)
        result = np.where(initialised, (old + product).astype(np.float32), product)
    dst.write(result.reshape(dst.shape), where, matmul=True)
    run.count(E.engine.tensor.name)
    return Instruction(where)


def _check_matmul_options(where, is_transpose, tile_position, tile_size, perf_mode, accumulate):
    if accumulate is not None and not isinstance(accumulate, bool):
        raise NkiSimError(f"{where}: accumulate must be None, True or False, got {accumulate!r}")
    if is_transpose:
        raise NkiSimError(f"{where}: is_transpose=True is not simulated; use nisa.nc_transpose")
    if tuple(tile_position) or tuple(tile_size):
        raise NkiSimError(f"{where}: PE tiling (tile_position/tile_size) is not simulated")
    if perf_mode is not E.matmul_perf_mode.none:
        raise NkiSimError(f"{where}: perf_mode={perf_mode!r} is not simulated")


def _check_matmul_operands(where, dst, st, mv) -> None:
    if dst.buffer is not psum:
        raise NkiSimError(f"{where}: dst {dst.describe()} must be in PSUM (TensorE writes only PSUM) [ISA]")
    if dst.dtype.numpy_name != "float32":
        raise NkiSimError(f"{where}: dst must be float32 on trn2, got {dst.dtype.numpy_name} [ISA] §2.2")
    for role, t in (("stationary", st), ("moving", mv)):
        if t.buffer is not sbuf:
            raise NkiSimError(
                f"{where}: {role} {t.describe()} must be in SBUF (TensorE reads only SBUF) [ISA]"
            )
        if t.dtype.numpy_name not in _MATMUL_INPUTS:
            raise NkiSimError(
                f"{where}: {role} dtype {t.dtype.numpy_name} is not a trn2 matmul input "
                f"({', '.join(_MATMUL_INPUTS)}) [ISA]"
            )
    if (st.dtype.numpy_name in _WIDE) != (mv.dtype.numpy_name in _WIDE):
        raise NkiSimError(
            f"{where}: fp32/tf32 inputs must pair with fp32/tf32; got stationary "
            f"{st.dtype.numpy_name} and moving {mv.dtype.numpy_name} [ISA]"
        )
    k, m, n = st.shape[0], st.free_size, mv.free_size
    if mv.shape[0] != k:
        raise NkiSimError(
            f"{where}: stationary has K={k} partitions but moving has {mv.shape[0]}; K (the "
            "contraction) is the partition dim of both"
        )
    for what, value, limit in (
        ("K (contraction partitions)", k, limits.MATMUL_K_MAX),
        ("stationary free size M", m, limits.GEMM_STATIONARY_FMAX),
        ("moving free size N", n, limits.GEMM_MOVING_FMAX),
    ):
        if value > limit:
            raise NkiSimError(f"{where}: {what} = {value} exceeds {limit} [TILING] [ISA] §2.2")
    if dst.shape[0] != m or dst.free_size != n:
        raise NkiSimError(
            f"{where}: dst {dst.describe()} must be [{m}, {n}] for stationary [{k}, {m}] and "
            f"moving [{k}, {n}]"
        )


def nc_transpose(dst, data, engine=E.engine.unknown, name=""):
    """dst[F, P] = data[P, F] (free dims flattened): TensorE up to 128x128 SBUF->PSUM, VectorE 32x32."""
    where = "nisa.nc_transpose"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    data = tile_arg(data, where, "data")
    p, f = data.shape[0], data.free_size
    default = E.engine.tensor if data.buffer is sbuf and dst.buffer is psum else E.engine.vector
    eng = pick_engine(where, engine, (E.engine.tensor, E.engine.vector), default)
    limit = limits.TENSOR_TRANSPOSE_MAX if eng is E.engine.tensor else limits.VECTOR_TRANSPOSE_MAX
    if p > limit or f > limit:
        raise NkiSimError(
            f"{where}: data {data.describe()} is [{p}, {f}]; the {eng.name} engine transposes at most "
            f"{limit}x{limit} [ISA]"
        )
    if dst.shape[0] != f or dst.free_size != p:
        raise NkiSimError(f"{where}: dst {dst.describe()} must be [{f}, {p}] for data [{p}, {f}]")
    if eng is E.engine.tensor:
        if data.buffer is not sbuf or dst.buffer is not psum:
            raise NkiSimError(f"{where}: a TensorE transpose reads SBUF and writes PSUM [ISA]")
    if dst.dtype is not data.dtype:  # nki.isa.nc_transpose (0.6): dst dtype = data dtype
        raise NkiSimError(
            f"{where}: transpose keeps the dtype: data is {data.dtype.numpy_name}, dst "
            f"{dst.dtype.numpy_name} [ISA]"
        )
    values = convert(data.read(f"{where} data").reshape(p, f), data.dtype, dst.dtype)
    dst.write(values.T.reshape(dst.shape), where)
    run.count(eng.name)
    return Instruction(where)
