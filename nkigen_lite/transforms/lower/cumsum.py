"""tensor.cumsum of floats along the last axis, on chip.

Lowered op by op, the composite's expansion (tensor/composites_index.py: log2(n) doubling steps,
each a concat) stores every step to HBM scratch and reads it back (cumsum(-1) of 8x2048 f32: 16x
the minimum traffic; 1x151936, top-p sampling over a vocabulary: 26x, 5.8 ms). Here each block
of rows is loaded once, scanned by one ``nki.tensor_tensor_scan`` per block (VectorE, 2 cycles
per element: ``r[i] = 1 * r[i-1] + x[i]`` in fp32, NumPy's sequential order) and stored once.

Rows shorter than ``SPREAD_MIN`` elements (or numerous: 128 or more) lie one per partition.
Otherwise each row is spread over ``g`` partitions, a contiguous segment of it per partition
(the row-major reshape, so loads and stores stay contiguous and use up to 16 DMA engines), with
up to ``128 // g`` rows per block: the segments are scanned, their totals (last column) moved
onto one partition by a TensorE transpose, scanned there per row into the exclusive prefix
(the total of the earlier segments of the row), moved back by a second transpose and added per
partition (ScalarE and VectorE by turns, per chunk). Transposes and adds are data movement and
sums: infinities and NaNs stay in their row and after their position. The sums are then grouped
by segment (within fp32 rounding of NumPy's, not bit-identical). Segments are loaded and
scanned in column chunks of at least ``CHUNK_MIN`` elements, each scan from the last column
before it, so that scans overlap loads.
8x2048 f32: 53.9 -> 7.95 us scheduled; 1x151936: 52.9 -> 11.86 us (docs/lowering.md).

A cumsum along the first axis goes to cumsum_columns.py. decompose keeps a cumsum these paths
take (capabilities.py asks ``cumsum_refusal``) and expands the others: integer cumsums (their
exact wrapping adds are wide-integer arithmetic), middle axes, first-axis shapes
``columns_refusal`` refuses, and rows whose segments do not fit an fp32 tile in SBUF.
"""

from __future__ import annotations

import math

from ...ir.dtypes import float32
from ...ir.errors import BuildError
from ...nki.types import Access, DimSlice
from ...tensor.composites_index import CumsumOp
from .context import LowerContext
from .cumsum_columns import columns_refusal, emit_columns
from .homes import HbmHome
from .peeled_loop import peeled_blocks
from .rules import item_rule
from .views import copy_home

MAX_ROW_BYTES = 65536  # per partition, of one fp32 tile (two are live)
SPREAD_MIN = 512  # elements per row from which a row is spread over partitions
MAX_ROWS_PER_BLOCK = 16  # spread rows per block: one small scan each for the carries


def segments(rows: int, n: int, p: int = 128) -> int:
    """Partitions per row ``g``: 1 (rows side by side) for short rows or 128 rows or more
    unless a row is too long for one fp32 tile; else the largest divisor of ``n`` that puts
    the rows of a block (at most ``MAX_ROWS_PER_BLOCK``, all rows when fewer) on at most ``p``
    partitions with segments that fit a tile. 0 if none fits."""
    long = n * 4 > MAX_ROW_BYTES
    if not long and (n < SPREAD_MIN or rows >= p):
        return 1
    cap = p // max(1, min(rows, MAX_ROWS_PER_BLOCK)) if not long else p
    for g in range(min(cap, n), 1, -1):
        if n % g == 0 and (n // g) * 4 <= MAX_ROW_BYTES and (long or g * min(rows, MAX_ROWS_PER_BLOCK) <= p):
            return g
    return 0 if long else 1


def cumsum_refusal(op) -> str | None:
    """Why the on-chip path cannot take ``op`` (a tensor.cumsum), or None."""
    x = op.operand(0).type
    if x.rank == 0:
        return "a 0-d operand has no axis"
    if not x.dtype.is_float or x.dtype.itemsize > 4:
        return f"{x.dtype} sums are not fp32 adds"
    if op.attrs["axis"] % x.rank == 0 and x.rank > 1:
        why = columns_refusal(x)  # the first axis: cumsum_columns.py
        return None if why is None else f"along the first axis: {why}"
    if op.attrs["axis"] % x.rank != x.rank - 1:
        return "the axis is neither the first nor the last"
    n = x.shape[-1]
    if segments(math.prod(x.shape) // n, n) == 0:
        return f"rows of {n:,} elements split into no segments of at most {MAX_ROW_BYTES:,} bytes of fp32"
    return None


def _cols(t, p: int, start: int, size: int) -> Access:
    return Access(t, (DimSlice(0, p, 1), DimSlice(start, size, 1)))


@item_rule(CumsumOp)
def lower_cumsum(ctx: LowerContext, op: CumsumOp) -> None:
    reason = cumsum_refusal(op)
    if reason is not None:  # decompose expands the ops this path does not take
        raise BuildError(f"lowering: {op.name} has no native lowering here ({reason}); decompose expands it")
    x, y = op.operand(0), op.result
    if op.attrs["axis"] % x.type.rank == 0 and x.type.rank > 1:
        _lower_first_axis(ctx, x, y)
        return
    n = x.type.shape[-1]
    rows = math.prod(x.type.shape) // n
    g = segments(rows, n, ctx.partitions)
    xh, yh = ctx.home(x), ctx.home_for_store(y)
    src, dst = _rows(xh, rows, n, g), _rows(yh, rows, n, g)
    if src is None:  # a strided or transposed view: copied contiguous first (copy_home)
        src = ctx.alloc_hbm((rows, n), x.type.dtype)
        copy_home(ctx, xh, src.reshape(x.type.shape))
    back = None
    if dst is None:  # computed contiguous, then copied into the result's view
        back = dst = ctx.alloc_hbm((rows, n), y.type.dtype)
    _emit_rows(ctx, src, dst, rows, n, g, x.type.dtype, y.type.dtype)
    if back is not None:
        copy_home(ctx, back.reshape(y.type.shape), yh)


def _lower_first_axis(ctx: LowerContext, x, y) -> None:
    """cumsum along dim 0 (cumsum_columns.py) between contiguous homes (others copied)."""
    shape = tuple(x.type.shape)
    flat = (shape[0], math.prod(shape[1:]))
    xh, yh = ctx.home(x), ctx.home_for_store(y)
    src, dst = _rows(xh, *flat, 1), _rows(yh, *flat, 1)
    if src is None or src.strides[0] != flat[1]:
        src = ctx.alloc_hbm(flat, x.type.dtype)
        copy_home(ctx, xh, src.reshape(shape))
    back = None
    if dst is None or dst.strides[0] != flat[1]:
        back = dst = ctx.alloc_hbm(flat, y.type.dtype)
    emit_columns(ctx, src.reshape(shape), dst.reshape(shape), shape, x.type.dtype, y.type.dtype)
    if back is not None:
        copy_home(ctx, back.reshape(shape), yh)


def _rows(h: HbmHome, rows: int, n: int, g: int) -> HbmHome | None:
    """``h`` as (rows, n) with unit-stride rows (and, spread, as whole rows of n), or None."""
    v = h.reshape((rows, n))
    if v is None or v.strides[1] != 1 or (g > 1 and v.reshape((rows * g, n // g)) is None):
        return None
    return v


def _emit_rows(ctx: LowerContext, src: HbmHome, dst: HbmHome, rows: int, n: int, g: int, xdt, ydt) -> None:
    """The prefix sums of the (rows, n) home ``src`` into ``dst``, ``g`` partitions per row."""
    seg = n // g
    if g > 1:  # each row over g partitions: rows of the (rows * g, seg) row-major reshape
        src, dst = src.reshape((rows * g, seg)), dst.reshape((rows * g, seg))
    sv, dv = ctx.view(src), ctx.view(dst)
    b = ctx.b
    p = ctx.partitions
    per = g * min(rows, p // g) if g > 1 else p  # partitions of one block: whole rows
    ones = b.alloc((p, 1), float32, "sbuf", name="csum_one")
    b.memset(dst=ones, value=1.0)

    parts = _chunks(seg)

    def block(r0, pr: int) -> None:
        cur = b.alloc((pr, seg), float32, "sbuf", name="csum")
        init = 0.0
        for c0, cw in parts:  # each column chunk scanned as it lands, from the last column before it
            raw = b.alloc((pr, cw), xdt, "sbuf", name="csum_in")
            b.dma_copy(dst=raw, src=Access(sv, (DimSlice(r0, pr, 1), DimSlice(c0, cw, 1))))
            every = Access(ones, (DimSlice(0, pr, 1), DimSlice(0, cw, 0)))  # 1.0, broadcast
            b.tensor_tensor_scan(dst=_cols(cur, pr, c0, cw), data0=every, data1=raw, initial=init)
            init = _cols(cur, pr, c0 + cw - 1, 1)
        carry = _carries(b, cur, ones, pr, seg, g) if g > 1 else None
        for j, (c0, cw) in enumerate(parts):
            rows_at = (DimSlice(r0, pr, 1), DimSlice(c0, cw, 1))
            out = _cols(cur, pr, c0, cw)
            if carry is not None or ydt is not float32:
                out = b.alloc((pr, cw), ydt, "sbuf", name="csum_out")
                if carry is not None:  # the row's earlier segments, added on ScalarE / VectorE by turns
                    eng = "scalar" if j % 2 == 0 else "vector"
                    b.tensor_scalar(out, _cols(cur, pr, c0, cw), "add", carry, engine=eng)
                else:
                    b.tensor_copy(dst=out, src=_cols(cur, pr, c0, cw), engine="scalar")
            b.dma_copy(dst=Access(dv, rows_at), src=out)

    peeled_blocks(b, rows * g, per, block)


CHUNK_MIN = 512  # elements per partition of one loaded column chunk (2 KiB of fp32)


def _chunks(seg: int) -> list[tuple[int, int]]:
    """(start, width) column chunks of a segment: loads of at least ``CHUNK_MIN`` elements per
    partition (the DMA's efficient size) so that the scan of one overlaps the next load."""
    k = max(1, seg // CHUNK_MIN)
    w = -(-seg // k)
    return [(c, min(w, seg - c)) for c in range(0, seg, w)]


def _carries(b, cur, ones, pr: int, seg: int, g: int) -> Access:
    """Per partition (segment) the sum of its row's earlier segments, a (pr, 1) PSUM column: the
    segment totals (last column) transposed onto one partition by TensorE, each row's exclusive
    prefix scanned there from PSUM (the scan of its first g - 1 totals written one column on,
    after a 0), transposed back."""
    ps = b.alloc((1, pr), float32, "psum", name="csum_tot")
    b.nc_transpose(dst=ps, data=_cols(cur, pr, seg - 1, 1))
    exc = b.alloc((1, pr), float32, "sbuf", name="csum_carry")
    b.memset(dst=Access(exc, (DimSlice(0, 1, 1), DimSlice(0, pr // g, g))), value=0.0)
    for r in range(pr // g):
        every = Access(ones, (DimSlice(0, 1, 1), DimSlice(0, g - 1, 0)))
        b.tensor_tensor_scan(
            dst=_cols(exc, 1, r * g + 1, g - 1), data0=every, data1=_cols(ps, 1, r * g, g - 1), initial=0.0
        )
    back = b.alloc((pr, 1), float32, "psum", name="csum_carry")
    b.nc_transpose(dst=back, data=exc)
    return _cols(back, pr, 0, 1)
