"""Hardware legality of the top-8 instructions (ops/top8.py), NKI 0.6 pages ``nki.isa.max8``,
``nki.isa.nc_find_index8``, ``nki.isa.nc_match_replace8``:

- Vector engine, SBUF / PSUM operands (the common compute rules);
- every operand on the same partitions (count and start);
- ``max8``: ``src`` has 8 ... 16,384 elements per partition and rank <= 3; ``dst`` holds exactly
  8 per partition;
- ``find_index8``: ``data`` as max8's ``src``; ``vals`` exactly 8 per partition; ``dst`` 8 per
  partition, uint16 or uint32;
- ``match_replace8``: ``data`` at most 16,384 elements per partition; ``vals`` exactly 8;
  ``dst`` the shape of ``data``; ``imm`` an fp32 number.
"""

from __future__ import annotations

from . import ops
from .verify_ops import _fp32_immediate, _same_pf, check_compute_common, rule


def _n(x: int) -> str:
    return f"{x:,}"


def _same_partitions(ctx, op, names) -> None:
    ref = op.access(names[0])
    for name in names[1:]:
        a = op.access(name)
        if a.partitions != ref.partitions or a.dims[0].offset != ref.dims[0].offset:
            raise ctx.fail(
                op,
                f"{name} covers {a.partitions} partitions but {names[0]} covers {ref.partitions} "
                "(or they start at different partitions); the top-8 instructions work per partition",
            )


def _width(ctx, op, name: str) -> None:
    a, w = op.access(name), ctx.target.top8_width
    if a.free_size != w:
        raise ctx.fail(op, f"{name} must hold exactly {w} elements per partition, got {_n(a.free_size)}")


def _data_range(ctx, op, name: str, lo: int | None) -> None:
    a, t = op.access(name), ctx.target
    hi = t.top8_free_max
    if (lo is not None and a.free_size < lo) or a.free_size > hi:
        span = f"{lo} ... {_n(hi)}" if lo is not None else f"at most {_n(hi)}"
        raise ctx.fail(op, f"{name} has {_n(a.free_size)} elements per partition; {op.name} reads {span}")
    if lo is not None and len(a.dims) > t.top8_data_max_rank:
        raise ctx.fail(
            op, f"{name} has rank {len(a.dims)}; {op.name} reads at most rank {t.top8_data_max_rank}"
        )


@rule(ops.Max8Op)
def _max8(ctx, op) -> None:
    check_compute_common(ctx, op)
    _same_partitions(ctx, op, ("src", "dst"))
    _data_range(ctx, op, "src", ctx.target.top8_free_min)
    _width(ctx, op, "dst")


@rule(ops.FindIndex8Op)
def _find_index8(ctx, op) -> None:
    check_compute_common(ctx, op)
    _same_partitions(ctx, op, ("data", "vals", "dst"))
    _data_range(ctx, op, "data", ctx.target.top8_free_min)
    _width(ctx, op, "vals")
    _width(ctx, op, "dst")
    dt = op.access("dst").dtype
    if dt.name not in ctx.target.top8_index_dtypes:
        raise ctx.fail(op, f"find_index8 dst must be uint16 or uint32, got {dt}")


@rule(ops.MatchReplace8Op)
def _match_replace8(ctx, op) -> None:
    check_compute_common(ctx, op)
    _same_partitions(ctx, op, ("data", "vals", "dst"))
    _data_range(ctx, op, "data", None)
    _width(ctx, op, "vals")
    _same_pf(ctx, op, "dst", "data")
    _fp32_immediate(ctx, op, "imm", op.attrs["imm"])
