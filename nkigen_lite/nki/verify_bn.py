"""Hardware legality of the batch-norm statistics instructions (ops/bn.py), NKI 0.6 pages
``nki.isa.bn_stats`` and ``nki.isa.bn_aggr``. Where a rule is stricter than the pages it says so:

- Vector engine (the common compute rules: on-chip operands, partition starts);
- ``dst`` and ``data`` on the same partitions (count and start): the statistics are per partition;
- ``bn_stats``: ``data`` a float tile of 2 ... ``bn_stats_fmax`` (512) elements per partition
  (at least 2, stricter: with one element the odd half is empty and its mean undefined), in SBUF
  or PSUM; ``dst`` exactly 6 fp32 elements per partition in SBUF (stricter: the page casts to any
  dst dtype, but the counts and sums bn_aggr reads lose precision in a narrower one);
- ``bn_aggr``: ``data`` fp32 in SBUF (stricter: where bn_stats writes), a multiple of 3 elements
  per partition (whole (count, mean, variance * count) triples), rank <= 5; ``dst`` exactly 2
  float elements per partition in SBUF, rank <= 3.
"""

from __future__ import annotations

from . import ops
from .types import MemorySpace
from .verify_ops import _spaces, check_compute_common, rule

SBUF, PSUM = MemorySpace.SBUF, MemorySpace.PSUM
_FLOATS = frozenset({"f32", "bf16", "f16"})


def _n(x: int) -> str:
    return f"{x:,}"


def _same_partitions(ctx, op) -> None:
    d, x = op.access("dst"), op.access("data")
    if d.partitions != x.partitions or d.dims[0].offset != x.dims[0].offset:
        raise ctx.fail(
            op,
            f"dst covers {d.partitions} partitions but data covers {x.partitions} (or they start at "
            f"different partitions); {op.name} computes its statistics per partition",
        )


def _width(ctx, op, want: int, dtypes) -> None:
    d = op.access("dst")
    if d.free_size != want:
        raise ctx.fail(op, f"dst must hold exactly {want} elements per partition, got {_n(d.free_size)}")
    if d.dtype.name not in dtypes:
        legal = "/".join(sorted(dtypes))
        raise ctx.fail(op, f"dst must be {legal}, got {d.dtype}")


def _rank(ctx, op, name: str, most: int) -> None:
    a = op.access(name)
    if len(a.dims) > most:
        raise ctx.fail(op, f"{name} has rank {len(a.dims)}; {op.name} takes at most rank {most}")


@rule(ops.BnStatsOp)
def _bn_stats(ctx, op) -> None:
    check_compute_common(ctx, op)
    t = ctx.target
    _spaces(ctx, op, "data", (SBUF, PSUM))
    _spaces(ctx, op, "dst", (SBUF,))
    _same_partitions(ctx, op)
    x = op.access("data")
    if not 2 <= x.free_size <= t.bn_stats_fmax:
        raise ctx.fail(
            op,
            f"data has {_n(x.free_size)} elements per partition; bn_stats reads 2 ... "
            f"{t.bn_stats_fmax} (bn_stats_fmax; split a longer row into chunks)",
        )
    if x.dtype.name not in _FLOATS:
        raise ctx.fail(op, f"data must be a float tile (f32/bf16/f16), got {x.dtype}")
    _width(ctx, op, t.bn_stats_width, {"f32"})


@rule(ops.BnAggrOp)
def _bn_aggr(ctx, op) -> None:
    check_compute_common(ctx, op)
    t = ctx.target
    _spaces(ctx, op, "data", (SBUF,))
    _spaces(ctx, op, "dst", (SBUF,))
    _same_partitions(ctx, op)
    x = op.access("data")
    k = t.bn_stat_fields
    if x.free_size % k:
        raise ctx.fail(
            op,
            f"data has {_n(x.free_size)} elements per partition, not a multiple of {k} "
            "(bn_aggr reads whole (count, mean, variance * count) triples)",
        )
    if x.dtype.name != "f32":
        raise ctx.fail(op, f"data must be f32 (the bn_stats statistics), got {x.dtype}")
    _rank(ctx, op, "data", t.bn_aggr_data_max_rank)
    _rank(ctx, op, "dst", t.bn_aggr_dst_max_rank)
    _width(ctx, op, t.bn_aggr_width, _FLOATS)
