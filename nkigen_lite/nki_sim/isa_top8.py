"""Vector-engine top-8 instructions: max8, nc_find_index8, nc_match_replace8 [ISA].

Values are compared as float32 (-0.0 equals +0.0). Undocumented cases raise instead of being
guessed: a NaN in the data or values (its order is unspecified), and match_replace8 asked to
replace a value the data does not hold often enough (undefined on the chip). Documented
behaviour: max8 writes the 8 largest in descending order; nc_find_index8 pairs a value that
``vals`` repeats with successive matches in ascending position order and writes all ones for a
missing value; nc_match_replace8 replaces the first k occurrences of a value ``vals`` holds k
times.
"""

from __future__ import annotations

import numpy as np

from . import enums as E
from . import limits
from .errors import NkiSimError
from .operands import Instruction, begin, rows, tile_arg
from .storage import round_to


def _no_nan(x: np.ndarray, where: str, role: str) -> np.ndarray:
    bad = np.argwhere(x != x)
    if bad.size:
        raise NkiSimError(
            f"{where}: {role} holds NaN at partition {int(bad[0][0])}; the order of NaN is not "
            "documented for this instruction [ISA]"
        )
    return x


def _data(t, where: str, role: str, lo: int | None):
    n, hi = t.free_size, limits.TOP8_FREE_MAX
    if (lo is not None and n < lo) or n > hi:
        span = f"{lo} to {hi}" if lo is not None else f"at most {hi}"
        raise NkiSimError(
            f"{where}: {role} {t.describe()} has {n} elements per partition; it reads {span} [ISA]"
        )
    if lo is not None and t.ndim > limits.TOP8_DATA_MAX_RANK:
        raise NkiSimError(
            f"{where}: {role} {t.describe()} has rank {t.ndim}; at most {limits.TOP8_DATA_MAX_RANK} [ISA]"
        )
    return _no_nan(rows(t, where, role), where, role)


def _eight(t, p: int, where: str, role: str) -> None:
    if t.shape[0] != p or t.free_size != limits.TOP8_WIDTH:
        raise NkiSimError(
            f"{where}: {role} {t.describe()} must be {p} partitions x {limits.TOP8_WIDTH} elements [ISA]"
        )


def _same_start(where: str, ref, **others) -> None:
    for role, t in others.items():
        if t.partition_start != ref.partition_start:
            raise NkiSimError(f"{where}: {role} {t.describe()} starts at another partition than the data")


def max8(dst, src, name=""):
    """dst = the 8 largest values of each partition of src, descending."""
    where = "nisa.max8"
    run = begin(where, name)
    dst, src = tile_arg(dst, where, "dst"), tile_arg(src, where, "src")
    x = _data(src, where, "src", limits.TOP8_FREE_MIN)
    _eight(dst, src.shape[0], where, "dst")
    _same_start(where, src, dst=dst)
    out = -np.sort(-x, axis=1, kind="stable")[:, : limits.TOP8_WIDTH]
    dst.write(round_to(out, dst.dtype).reshape(dst.shape), where)
    run.count(E.engine.vector.name)
    return Instruction(where)


def _positions(x: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Per partition, the match of each value (successive matches for repeats), or -1."""
    out = np.full(vals.shape, -1, dtype=np.int64)
    for p in range(x.shape[0]):
        taken: dict = {}
        for j in range(vals.shape[1]):
            v = float(vals[p, j])
            where = np.nonzero(x[p] == v)[0]
            k = taken.get(v, 0)
            taken[v] = k + 1
            if k < len(where):
                out[p, j] = where[k]
    return out


def nc_find_index8(dst, data, vals, name=""):
    """dst[p, j] = the first index of vals[p, j] in partition p of data (uint16 / uint32)."""
    where = "nisa.nc_find_index8"
    run = begin(where, name)
    dst, data, vals = (tile_arg(t, where, r) for t, r in ((dst, "dst"), (data, "data"), (vals, "vals")))
    x = _data(data, where, "data", limits.TOP8_FREE_MIN)
    p = data.shape[0]
    _eight(vals, p, where, "vals")
    _eight(dst, p, where, "dst")
    _same_start(where, data, vals=vals, dst=dst)
    if dst.dtype.numpy_name not in limits.TOP8_INDEX_DTYPES:
        raise NkiSimError(f"{where}: dst must be uint16 or uint32, got {dst.dtype.numpy_name} [ISA]")
    v = _no_nan(rows(vals, where, "vals"), where, "vals")
    pos = _positions(x, v)
    ones = np.iinfo(dst.dtype.np_dtype).max
    dst.write(np.where(pos < 0, ones, pos).astype(dst.dtype.np_dtype).reshape(dst.shape), where)
    run.count(E.engine.vector.name)
    return Instruction(where)


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=""):
    """dst = data with the first occurrence of each value of vals replaced by imm."""
    where = "nisa.nc_match_replace8"
    run = begin(where, name)
    if dst_idx is not None:
        raise NkiSimError(f"{where}: dst_idx is not simulated (the emitter never writes it)")
    dst, data, vals = (tile_arg(t, where, r) for t, r in ((dst, "dst"), (data, "data"), (vals, "vals")))
    if not isinstance(imm, (float, np.floating)):
        raise NkiSimError(f"{where}: imm must be a float32 number, got {imm!r} [ISA]")
    x = _data(data, where, "data", None)
    p = data.shape[0]
    _eight(vals, p, where, "vals")
    _same_start(where, data, vals=vals, dst=dst)
    if dst.shape[0] != p or dst.free_size != data.free_size:
        raise NkiSimError(f"{where}: dst {dst.describe()} must have the shape of data {data.describe()}")
    v = _no_nan(rows(vals, where, "vals"), where, "vals")
    pos = _positions(x, v)
    if (pos < 0).any():
        q = int(np.argwhere(pos < 0)[0][0])
        raise NkiSimError(
            f"{where}: partition {q} of vals holds a value data does not hold often enough (undefined "
            "on the chip) [ISA]"
        )
    raw = data.read(where).reshape(p, -1)
    if dst.dtype is data.dtype:
        out = np.array(raw, copy=True)
        fill = round_to(np.float32(imm), dst.dtype)
    else:
        out = round_to(x, dst.dtype)
        fill = round_to(np.float32(imm), dst.dtype)
    for q in range(p):
        out[q, pos[q]] = fill
    dst.write(out.reshape(dst.shape), where)
    run.count(E.engine.vector.name)
    return Instruction(where)
