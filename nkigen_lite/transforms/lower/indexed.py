"""Lowering of gather_rows / scatter_rows: indirect DMAs that move only the selected rows.

``gather_rows(table, ids)``: the table is viewed as ``(N, R)`` rows and the ids as a ``(K, 1)``
column; per chunk of up to 128 ids the ids are loaded into an SBUF column, and per chunk of
the row (at most ``ROW_CHUNK_BYTES`` per partition) one ``nki.dma_gather`` brings the selected
rows into an SBUF tile (one row per partition) and a ``dma_copy`` stores them into the result.
HBM traffic: the K ids, K rows read, K rows written — never the table.

``scatter_rows(dst, ids, rows)``: the result is a copy of ``dst`` (one HBM -> HBM DMA) into
which, per chunk of ids, the rows are loaded into SBUF and written by ``nki.dma_scatter``.
Repeated ids were made to carry identical rows by decompose (``unique = true``), so the
hardware's unspecified write order within one DMA cannot change the result; chunks run in
program order.

Full chunks run in a ``fori_loop`` (the remainder is peeled with its static size): the code
size does not grow with the number of ids.
"""

from __future__ import annotations

import math

from ...ir.types import row_major_strides
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T
from .context import LowerContext
from .homes import HbmHome
from .indexed_columns import gather_columns
from .onchip_rows import note_stored, relaid_on_chip
from .rules import item_rule
from .views import copy_home

ROW_CHUNK_BYTES = 16 * 1024  # per partition, per data tile


def _reshape_of_whole(h: HbmHome | None) -> bool:
    """True when ``h`` addresses all of its base in row-major order (a base or a reshape of it)."""
    return (
        h is not None
        and h.offset == 0
        and math.prod(h.shape) == h.base.type.size
        and all(s == c for n, s, c in zip(h.shape, h.strides, row_major_strides(h.shape)) if n != 1)
    )


def _rows_home(ctx: LowerContext, h: HbmHome, shape) -> HbmHome:
    """``h`` as a row-major ``shape`` view of a whole tensor, copying when it is not one."""
    r = h.reshape(tuple(shape))
    if _reshape_of_whole(r):
        return r
    out = ctx.alloc_hbm(shape, h.base.type.dtype)
    copy_home(ctx, h, out.reshape(tuple(h.shape)) or out)
    return out


def _window(view, rows: Affine, n: int, f0: Affine, nf: int) -> Access:
    """Rows [rows, rows+n) x columns [f0, f0+nf) of the 2-D tensor (or view) ``view``."""
    return Access(view, (DimSlice(rows, n, 1), DimSlice(f0, nf, 1)))


def _chunks(ctx: LowerContext, total: int, step: int, body) -> None:
    """``body(offset, size)`` over [0, total) in chunks of ``step``: full chunks in a fori_loop
    (or once), the remainder peeled."""
    full, rem = divmod(total, step)
    if full == 1:
        body(Affine.of(0), step)
    elif full > 1:
        with ctx.b.fori_loop(0, full) as j:
            body(Affine.of(j) * step, step)
    if rem:
        body(Affine.of(full * step), rem)


def _id_column(ctx: LowerContext, ids) -> HbmHome:
    k = ids.type.size
    return _rows_home(ctx, ctx.home(ids), (k, 1))


def _row_chunk(row: int, itemsize: int) -> int:
    return max(1, min(row, ROW_CHUNK_BYTES // itemsize))


@item_rule(T.GatherRowsOp)
def lower_gather_rows(ctx: LowerContext, op: T.GatherRowsOp) -> None:
    table, ids = op.operands
    n = table.shape[0]
    row = math.prod(table.shape[1:])
    k = ids.type.size
    dt = table.dtype
    src = _rows_home(ctx, ctx.home(table), (n, row))
    if gather_columns(ctx, op, src, row):
        return
    idc = _ids_on_chip(ctx, ids, k) or _id_column(ctx, ids)
    out = ctx.home_for_store(op.result)
    out2 = out.reshape((k, row))
    if out2 is None:  # a home that is not row-major (a concat slice): gather into scratch
        tmp = ctx.alloc_hbm((k, row), dt)
        _gather(ctx, src, idc, tmp, k, row)
        copy_home(ctx, tmp.reshape(tuple(out.shape)), out)
        return
    t = _gather(ctx, src, idc, out2, k, row)
    if t is not None:
        note_stored(ctx, op.result, Access.whole(t), top_level=len(ctx.b._blocks) == 1)


def _ids_on_chip(ctx: LowerContext, ids, k: int) -> Access | None:
    """The ids as an SBUF ``(k, 1)`` int32 / uint32 column a top-level group left (onchip_rows.py),
    when all of them fit one chunk (a tile of more dims, even of size 1, is no column)."""
    acc = relaid_on_chip(ctx, ids, k) if k <= ctx.partitions else None
    if acc is None or len(acc.dims) != 2 or acc.free_size != 1 or acc.dtype.name not in ("i32", "u32"):
        return None
    return acc


def _ids_tile(ctx, idc, id_view, k0: Affine, p: int):
    """The SBUF id column of one chunk: the on-chip column itself, or loaded from HBM."""
    if isinstance(idc, Access):
        return idc
    it = ctx.b.alloc((p, 1), idc.base.type.dtype, "sbuf", name="ids")
    ctx.b.dma_copy(dst=it, src=_window(id_view, k0, p, Affine.of(0), 1))
    return it


def _gather(ctx, src: HbmHome, idc, out: HbmHome, k: int, row: int):
    """Gather and store the rows; returns the SBUF tile holding all of them when one gather
    brought them (it is then kept for later readers, onchip_rows.py), else None."""
    dt = src.base.type.dtype
    whole = k <= ctx.partitions and row <= _row_chunk(row, dt.itemsize)
    kept = []
    fc = _row_chunk(row, dt.itemsize)
    table = Access(ctx.view(src), (DimSlice(0, src.shape[0], 1), DimSlice(0, row, 1)))
    id_view = ctx.view(idc) if not isinstance(idc, Access) else None
    out_view = ctx.view(out)  # views are made outside the loops

    def ids_chunk(k0: Affine, p: int) -> None:
        it = _ids_tile(ctx, idc, id_view, k0, p)

        def row_chunk(f0: Affine, nf: int) -> None:
            t = ctx.b.alloc((p, nf), dt, "sbuf", name="rows")
            cols = Access(table.tensor, (table.dims[0], DimSlice(f0, nf, 1)))
            ctx.b.dma_gather(dst=t, src=cols, index=it)
            ctx.b.dma_copy(dst=_window(out_view, k0, p, f0, nf), src=t)
            if whole:
                kept.append(t)
            else:
                ctx.b.dealloc(t)

        _chunks(ctx, row, fc, row_chunk)
        if not isinstance(it, Access):
            ctx.b.dealloc(it)

    _chunks(ctx, k, ctx.partitions, ids_chunk)
    return kept[0] if kept else None


@item_rule(T.ScatterRowsOp)
def lower_scatter_rows(ctx: LowerContext, op: T.ScatterRowsOp) -> None:
    dst, ids, rows = op.operands
    n = dst.shape[0]
    row = math.prod(dst.shape[1:])
    k = ids.type.size
    dt = dst.dtype
    home = ctx.homes.get(op.result)
    work = home.reshape((n, row)) if home is not None else None
    if not _reshape_of_whole(work):
        work = ctx.alloc_hbm((n, row), dt)
        if home is None:
            ctx.homes[op.result] = work.reshape(tuple(dst.shape))
    if not ctx.home(dst).same_elements(work.reshape(tuple(dst.shape))):  # in place: rows only
        copy_home(ctx, ctx.home(dst), work.reshape(tuple(dst.shape)))
    idc = _ids_on_chip(ctx, ids, k) or _id_column(ctx, ids)
    fc = _row_chunk(row, dt.itemsize)
    held = relaid_on_chip(ctx, rows, k) if k <= ctx.partitions and row <= fc else None
    if held is not None:  # the rows as one SBUF tile (onchip_rows.py): written from there
        src_view = None
    else:
        src = ctx.home(rows).reshape((k, row))
        if src is None:
            src = _rows_home(ctx, ctx.home(rows), (k, row))
        src_view = ctx.view(src)
    table = Access(ctx.view(work), (DimSlice(0, n, 1), DimSlice(0, row, 1)))
    id_view = ctx.view(idc) if not isinstance(idc, Access) else None  # views outside the loops

    def ids_chunk(k0: Affine, p: int) -> None:
        it = _ids_tile(ctx, idc, id_view, k0, p)

        def row_chunk(f0: Affine, nf: int) -> None:
            cols = Access(table.tensor, (table.dims[0], DimSlice(f0, nf, 1)))
            if held is not None:
                ctx.b.dma_scatter(dst=cols, src=Access(held.tensor, held.dims), index=it)
                return
            t = ctx.b.alloc((p, nf), dt, "sbuf", name="rows")
            ctx.b.dma_copy(dst=t, src=_window(src_view, k0, p, f0, nf))
            ctx.b.dma_scatter(dst=cols, src=t, index=it)
            ctx.b.dealloc(t)

        _chunks(ctx, row, fc, row_chunk)
        if not isinstance(it, Access):
            ctx.b.dealloc(it)

    _chunks(ctx, k, ctx.partitions, ids_chunk)
    if home is not None and work.base is not home.base:
        copy_home(ctx, work.reshape(tuple(dst.shape)), home)
