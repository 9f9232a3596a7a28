"""Data movement and GpSimd fills: dma_copy, tensor_copy(_predicated), memset, iota, affine_select."""

from __future__ import annotations

import numpy as np

from . import enums as E
from . import limits
from .enums import psum, sbuf
from .errors import NkiSimError
from .operands import (
    Instruction,
    begin,
    check_gpsimd_access,
    check_one_psum_input,
    is_scalar,
    pick_engine,
    same_free_dims,
    same_layout,
    tensor_arg,
    tile_arg,
)
from .operators import AluOp, equal
from .storage import as_fp32, convert, round_to

_COPY_ENGINES = (E.engine.vector, E.engine.scalar, E.engine.gpsimd)


def dma_copy(
    dst,
    src,
    priority=None,
    oob_mode=E.oob_mode.error,
    dge_mode=E.dge_mode.unknown,
    engine=E.engine.unknown,
    name="",
):
    """dst = src by DMA (HBM<->SBUF, HBM<->HBM, SBUF<->SBUF); dtypes other than dst's cast via fp32."""
    where = "nisa.dma_copy"
    run = begin(where, name)
    dst = tensor_arg(dst, where, "dst")
    src = tensor_arg(src, where, "src")
    _check_dma_options(where, priority, oob_mode, dge_mode, engine)
    for role, t in (("src", src), ("dst", dst)):
        if t.buffer is psum:
            raise NkiSimError(
                f"{where}: {role} {t.describe()} is in PSUM; DMA moves HBM<->SBUF, HBM<->HBM and "
                "SBUF<->SBUF only (copy PSUM to SBUF with nisa.tensor_copy first) [MIG] [ISA]"
            )
    if dst.size != src.size:
        raise NkiSimError(
            f"{where}: dst {dst.describe()} has {dst.size} elements but src {src.describe()} has {src.size}"
        )
    if dge_mode is E.dge_mode.hwdge and dst.dtype is not src.dtype:
        raise NkiSimError(
            f"{where}: dge_mode=hwdge copies raw bytes, so src ({src.dtype.numpy_name}) and dst "
            f"({dst.dtype.numpy_name}) dtypes must match [DMA-OV] [MIG]"
        )
    values = convert(src.read(f"{where} src"), src.dtype, dst.dtype)
    dst.write(values.reshape(dst.shape), where)
    run.count_dma(dst.size * dst.dtype.itemsize)
    return Instruction(where)


def _check_dma_options(where, priority, oob, dge, eng) -> None:
    if priority is not None:
        raise NkiSimError(f"{where}: priority= is NeuronCore-v4 only; the simulator models trn2 [ISA]")
    if not isinstance(oob, E.oob_mode):
        raise NkiSimError(f"{where}: oob_mode must be a nisa.oob_mode member, got {oob!r}")
    if not isinstance(dge, E.dge_mode):
        raise NkiSimError(f"{where}: dge_mode must be a nisa.dge_mode member, got {dge!r}")
    if not isinstance(eng, E.engine):
        raise NkiSimError(f"{where}: engine must be a nisa.engine member, got {eng!r} [MIG]")
    if eng is not E.engine.unknown:
        if eng not in (E.engine.sync, E.engine.scalar):
            raise NkiSimError(f"{where}: engine={eng.name}; a DMA is issued from sync or scalar [ISA]")
        if dge is not E.dge_mode.hwdge:
            raise NkiSimError(f"{where}: engine= may only be given with dge_mode=hwdge [ISA]")


def tensor_copy(dst, src, engine=E.engine.unknown, name=""):
    """On-chip copy (bit-exact when dtypes match, else via fp32) on Vector, Scalar or GpSimd."""
    where = "nisa.tensor_copy"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    src = tile_arg(src, where, "src")
    eng = pick_engine(where, engine, _COPY_ENGINES, _COPY_ENGINES[0])
    check_gpsimd_access(where, eng, dst=dst, src=src)
    same_free_dims(where, "dst", dst, src=src)
    values = convert(src.read(f"{where} src"), src.dtype, dst.dtype)
    dst.write(values.reshape(dst.shape), where)
    run.count(eng.name)
    return Instruction(where)


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=""):
    """dst[predicate != 0] = src (Vector engine); src is a tile or a scalar."""
    where = "nisa.tensor_copy_predicated"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    pred = tile_arg(predicate, where, "predicate")
    if not (pred.dtype.is_int or pred.dtype.is_bool):
        raise NkiSimError(f"{where}: predicate must have an integer dtype, got {pred.dtype.numpy_name} [ISA]")
    same_layout(where, "dst", dst, predicate=pred)
    mask = pred.read(f"{where} predicate").reshape(dst.shape) != 0
    if reverse_pred:
        mask = ~mask
    if is_scalar(src):
        values = round_to(np.float32(src), dst.dtype)
    else:
        src = tile_arg(src, where, "src")
        same_layout(where, "dst", dst, src=src)
        check_one_psum_input(where, src=src, predicate=pred)
        values = convert(src.read(f"{where} src"), src.dtype, dst.dtype).reshape(dst.shape)
    dst.write(values, where, mask=mask)
    run.count(E.engine.vector.name)
    return Instruction(where)


def memset(dst, value, engine=E.engine.unknown, name=""):
    """Fill dst with a compile-time constant (an int for integer dtypes) on Vector or GpSimd."""
    where = "nisa.memset"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    eng = pick_engine(where, engine, (E.engine.vector, E.engine.gpsimd), E.engine.vector)
    check_gpsimd_access(where, eng, dst=dst)
    if not is_scalar(value) and not isinstance(value, (bool, np.bool_)):
        raise NkiSimError(f"{where}: value must be a Python scalar, got {type(value).__name__}")
    if (dst.dtype.is_int or dst.dtype.is_bool) and not isinstance(value, (int, np.integer)):
        raise NkiSimError(f"{where}: value {value!r} must be an int for {dst.dtype.numpy_name} dst [MIG]")
    if isinstance(value, (int, np.integer)) and not dst.dtype.is_float:
        filled = round_to(np.full(dst.shape, int(value), np.int64), dst.dtype)
    else:
        filled = round_to(np.full(dst.shape, value, np.float32), dst.dtype)
    dst.write(filled, where)
    run.count(eng.name)
    return Instruction(where)


def iota(dst, pattern, offset=0, channel_multiplier=0, name=""):
    """dst[c, i...] = offset + c * channel_multiplier + sum(step * i) in int32, cast on write (GpSimd)."""
    where = "nisa.iota"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    if dst.buffer is not sbuf:
        raise NkiSimError(f"{where}: dst {dst.describe()} must be in SBUF (GpSimd) [ISA]")
    values = affine_values(where, dst, pattern, offset, channel_multiplier)
    dst.write(round_to(values, dst.dtype).reshape(dst.shape), where)
    run.count(E.engine.gpsimd.name)
    return Instruction(where)


def affine_values(where: str, dst, pattern, offset, channel_multiplier) -> np.ndarray:
    """offset + p * channel_multiplier + sum(step * index) as int64 [partitions, free], int32-checked."""
    for role, v in (("offset", offset), ("channel_multiplier", channel_multiplier)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise NkiSimError(f"{where}: {role} must be an int, got {v!r}")
    ok = (
        isinstance(pattern, (list, tuple))
        and 0 < len(pattern) <= limits.PATTERN_MAX_DIMS
        and all(
            isinstance(p, (list, tuple))
            and len(p) == 2
            and all(isinstance(v, (int, np.integer)) for v in p)
            and p[1] > 0
            for p in pattern
        )
    )
    if not ok:
        raise NkiSimError(
            f"{where}: pattern {pattern!r} must be 1..{limits.PATTERN_MAX_DIMS} [step, num] int pairs "
            "with num > 0 [ISA]"
        )
    nums = [int(n) for _, n in pattern]
    if int(np.prod(nums)) != dst.free_size:
        raise NkiSimError(
            f"{where}: pattern {pattern} covers {int(np.prod(nums))} elements per partition but dst "
            f"{dst.describe()} has {dst.free_size}"
        )
    grid = np.zeros(nums, np.int64)
    for d, (step, n) in enumerate(pattern):
        shape = [1] * len(nums)
        shape[d] = n
        grid = grid + (np.arange(n, dtype=np.int64) * int(step)).reshape(shape)
    chan = np.arange(dst.shape[0], dtype=np.int64)[:, None] * int(channel_multiplier)
    values = int(offset) + chan + grid.reshape(1, -1)
    info = np.iinfo(np.int32)
    if values.min() < info.min or values.max() > info.max:
        raise NkiSimError(f"{where}: affine values leave the int32 range the engine computes in [ISA]")
    return values


def affine_select(
    dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=equal, offset=0, name=""
):
    """dst = cmp_op(offset + p * channel_multiplier + sum(step * i), 0) ? on_true : on_false_value."""
    where = "nisa.affine_select"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    on_true = tile_arg(on_true_tile, where, "on_true_tile")
    for role, t in (("dst", dst), ("on_true_tile", on_true)):
        if t.buffer is not sbuf:
            raise NkiSimError(f"{where}: {role} {t.describe()} must be in SBUF (GpSimd) [ISA]")
    same_layout(where, "dst", dst, on_true_tile=on_true)
    if not isinstance(cmp_op, AluOp) or cmp_op.kind != "compare":
        raise NkiSimError(f"{where}: cmp_op must be a comparison token such as nl.equal, got {cmp_op!r}")
    v = on_false_value
    if not isinstance(v, (float, np.floating)):
        raise NkiSimError(f"{where}: on_false_value must be a float32 number, got {v!r} [ISA]")
    values = affine_values(where, dst, pattern, offset, channel_multiplier)
    keep = cmp_op.apply(values, np.int64(0)) != 0
    out = np.where(keep, as_fp32(on_true.read(where)).reshape(keep.shape), np.float32(on_false_value))
    dst.write(round_to(out, dst.dtype).reshape(dst.shape), where)
    run.count(E.engine.gpsimd.name)
    return Instruction(where)
