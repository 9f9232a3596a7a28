"""Vector-engine batch-norm statistics: bn_stats, bn_aggr [ISA].

bn_stats: per partition, over the flattened free elements (2 to 512), the count, mean and
variance * count of the even-indexed elements, then of the odd-indexed ones, computed in float32
(the mean from a float32 sum, then the squared deviations from it) into a float32 (P, 6) dst.
bn_aggr: folds the (count, mean, variance * count) triples of each partition one after another
into a running triple (the pairwise update: mean += (m - mean) * n / (N + n), M2 += m2 +
delta**2 * N * n / (N + n)), all in float32, and writes (mean, M2 / N).

Stricter than the chip (what the compiler never emits is refused): bn_stats of fewer than 2
elements (an empty odd half), a non-float32 bn_stats dst or bn_aggr input, a bn_aggr input
outside SBUF, and a triple whose count is not a positive integer.
"""

from __future__ import annotations

import numpy as np

from . import enums as E
from . import limits
from .errors import NkiSimError
from .operands import Instruction, begin, in_psum, rows, tile_arg
from .storage import round_to

_FLOATS = ("float32", "bfloat16", "float16")


def _same_partitions(where: str, dst, data) -> None:
    if dst.shape[0] != data.shape[0] or dst.partition_start != data.partition_start:
        raise NkiSimError(
            f"{where}: dst {dst.describe()} and data {data.describe()} must cover the same partitions "
            "(the statistics are per partition) [ISA]"
        )


def _dst(where: str, dst, width: int, dtypes) -> None:
    if dst.free_size != width:
        raise NkiSimError(f"{where}: dst {dst.describe()} must hold {width} elements per partition [ISA]")
    if dst.dtype.numpy_name not in dtypes:
        raise NkiSimError(f"{where}: dst must be {' / '.join(dtypes)}, got {dst.dtype.numpy_name}")
    if in_psum(dst):
        raise NkiSimError(f"{where}: dst {dst.describe()} must be in SBUF")


def bn_stats(dst, data, name=""):
    """dst[p] = (count, mean, variance * count) of data's even then odd elements of partition p."""
    where = "nisa.bn_stats"
    run = begin(where, name)
    dst, data = tile_arg(dst, where, "dst"), tile_arg(data, where, "data")
    n = data.free_size
    if not 2 <= n <= limits.BN_STATS_FMAX:
        raise NkiSimError(
            f"{where}: data {data.describe()} has {n} elements per partition; it reads 2 to "
            f"{limits.BN_STATS_FMAX} (bn_stats_fmax) [ISA]"
        )
    if data.dtype.numpy_name not in _FLOATS:
        raise NkiSimError(f"{where}: data must be a float tile, got {data.dtype.numpy_name}")
    _dst(where, dst, limits.BN_STATS_WIDTH, ("float32",))
    _same_partitions(where, dst, data)
    x = rows(data, where, "data")
    out = np.empty((x.shape[0], limits.BN_STATS_WIDTH), np.float32)
    for k, start in enumerate((0, 1)):
        part = x[:, start::2]
        count = np.float32(part.shape[1])
        mean = np.add.reduce(part, axis=1, dtype=np.float32) / count
        m2 = np.add.reduce(np.square(part - mean[:, None]), axis=1, dtype=np.float32)
        out[:, 3 * k] = count
        out[:, 3 * k + 1] = mean
        out[:, 3 * k + 2] = m2
    dst.write(round_to(out, dst.dtype).reshape(dst.shape), where)
    run.count(E.engine.vector.name)
    return Instruction(where)


def bn_aggr(dst, data, name=""):
    """dst[p] = (mean, variance) of the elements the (count, mean, variance * count) triples of
    data's partition p describe."""
    where = "nisa.bn_aggr"
    run = begin(where, name)
    dst, data = tile_arg(dst, where, "dst"), tile_arg(data, where, "data")
    k = limits.BN_STAT_FIELDS
    if data.free_size % k:
        raise NkiSimError(
            f"{where}: data {data.describe()} has {data.free_size} elements per partition, not a "
            f"multiple of {k} (whole bn_stats triples) [ISA]"
        )
    if data.dtype.numpy_name != "float32" or in_psum(data):
        raise NkiSimError(f"{where}: data {data.describe()} must be a float32 SBUF tile (bn_stats output)")
    if data.ndim > limits.BN_AGGR_DATA_MAX_RANK or dst.ndim > limits.BN_AGGR_DST_MAX_RANK:
        raise NkiSimError(
            f"{where}: data rank {data.ndim} / dst rank {dst.ndim}; at most "
            f"{limits.BN_AGGR_DATA_MAX_RANK} / {limits.BN_AGGR_DST_MAX_RANK} [ISA]"
        )
    _dst(where, dst, limits.BN_AGGR_WIDTH, _FLOATS)
    _same_partitions(where, dst, data)
    t = rows(data, where, "data").reshape(data.shape[0], -1, k)
    counts = t[:, :, 0]
    if not np.all((counts > 0) & (counts == np.round(counts))):
        p = int(np.argwhere(~((counts > 0) & (counts == np.round(counts))))[0][0])
        raise NkiSimError(
            f"{where}: partition {p} holds a count that is not a positive integer; bn_aggr reads "
            "bn_stats outputs (a zero count leaves its mean undefined)"
        )
    total = t[:, 0, 0].copy()
    mean = t[:, 0, 1].copy()
    m2 = t[:, 0, 2].copy()
    for j in range(1, t.shape[1]):
        n, m, s = t[:, j, 0], t[:, j, 1], t[:, j, 2]
        both = total + n
        delta = m - mean
        mean = mean + delta * (n / both)
        m2 = m2 + s + delta * delta * (total * n / both)
        total = both
    out = np.stack([mean, m2 / total], axis=1).astype(np.float32)
    dst.write(round_to(out, dst.dtype).reshape(dst.shape), where)
    run.count(E.engine.vector.name)
    return Instruction(where)
