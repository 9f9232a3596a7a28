"""A row gather whose ids form a ``(K, M)`` grid, ``K`` at most the partitions: one indirect
DMA per id column.

``gather_rows(table, ids)`` with ids of shape ``(..., M)`` (``K`` = the other dims' product)
is ``out[k, m] = table[ids[k, m]]``. The ids sit in one SBUF ``(K, M)`` tile (a top-level
group's tile holding them, lower/onchip_rows.py, or one load of the ids), and per column ``m``
one ``nki.dma_gather`` with the index column ``ids[:, m]`` brings ``K`` rows into columns
``[m R, (m + 1) R)`` of one ``(K, M R)`` tile, stored by one DMA (``M R`` contiguous elements
per partition). ``take_along_axis`` of a ``(128, 8)`` index (the element offsets computed on
chip by its decomposition) moves by 8 gathers, one index load at most and one store, instead of
an index store and, per 128 ids, an index load, a gather and a store (3 dependent DMAs each).

Taken when it issues fewer DMAs than the 128-id chunks (``M + 2 < 3 ceil(K M / 128)``) and a
partition's ``M R`` elements fit one data tile; otherwise indexed.py's chunks run.
"""

from __future__ import annotations

import math

from ...nki.types import Access, DimSlice
from .context import LowerContext
from .onchip_rows import note_stored, relaid_on_chip

_ENGINES = ("vector",)  # the gathered columns' copies into the stored tile: one engine, in order

COLUMN_BYTES = 16 * 1024
"""At most this many bytes per partition in the gathered ``(K, M R)`` tile."""


def _grid(ids, partitions: int) -> tuple[int, int] | None:
    """(K, M) of ids of two or more dims, or None."""
    if ids.type.rank < 2:
        return None
    m = ids.type.shape[-1]
    k = ids.type.size // max(m, 1)
    if m < 2 or not 1 <= k <= partitions:
        return None
    return k, m


def _id_tile(ctx: LowerContext, ids, k: int, m: int) -> Access | None:
    """The ids as an SBUF (k, m) int32 / uint32 tile with unit-stride columns: held on chip,
    or loaded from their HBM home when it is row-major."""
    acc = relaid_on_chip(ctx, ids, k)
    if acc is not None:
        ok = len(acc.dims) == 2 and acc.dims[1].stride == 1 and acc.free_size == m
        return acc if ok and acc.dtype.name in ("i32", "u32") else None
    home = ctx.home(ids).reshape((k, m))
    if home is None or ids.type.dtype.name not in ("i32", "u32"):
        return None
    t = ctx.b.alloc((k, m), ids.type.dtype, "sbuf", name="ids")
    ctx.b.dma_copy(dst=t, src=Access.whole(ctx.view(home)))
    return Access.whole(t)


def gather_columns(ctx: LowerContext, op, src, row: int) -> bool:
    """Lower ``op`` (gather_rows of ``src``, the table as ``(N, row)`` rows) by one gather per
    id column; False (nothing emitted) when the form does not apply."""
    table, ids = op.operands
    grid = _grid(ids, ctx.partitions)
    dt = table.dtype
    if grid is None:
        return False
    k, m = grid
    if m * row * dt.itemsize > COLUMN_BYTES or m + 2 >= 3 * math.ceil(k * m / ctx.partitions):
        return False
    out = ctx.home_for_store(op.result).reshape((k, m * row))
    if out is None:
        return False
    it = _id_tile(ctx, ids, k, m)
    if it is None:
        return False
    cols = Access(ctx.view(src), (DimSlice(0, src.shape[0], 1), DimSlice(0, row, 1)))
    p0, f0 = it.dims
    parts = []
    for j in range(m):  # a tile each: writes to one buffer would wait for each other
        part = ctx.b.alloc((k, row), dt, "sbuf", name="col")
        index = Access(it.tensor, (p0, DimSlice(f0.offset + j, 1, 1)))
        ctx.b.dma_gather(dst=part, src=cols, index=index)
        parts.append(part)
    t = ctx.b.alloc((k, m * row), dt, "sbuf", name="rows")
    for j, part in enumerate(parts):
        dst = Access(t, (DimSlice(0, k, 1), DimSlice(j * row, row, 1)))
        ctx.b.tensor_copy(dst=dst, src=part, engine=_ENGINES[j % len(_ENGINES)])
        ctx.b.dealloc(part)
    ctx.b.dma_copy(dst=Access.whole(ctx.view(out)), src=t)
    note_stored(ctx, op.result, Access.whole(t), top_level=len(ctx.b._blocks) == 1)
    return True
