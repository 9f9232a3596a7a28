"""tensor.cumsum of floats along the last axis, on chip.

The composite's expansion (tensor/composites_index.py) adds in log2(n) doubling steps, each a
concat of ``y[:s]`` and ``y[s:] + y[:n-s]``; lowered op by op every step is stored to HBM
scratch and read back (cumsum(-1) of 8x2048 f32: 16x the minimum traffic, 459x the roofline;
1x151936, top-p sampling over a vocabulary: 26x, 5.8 ms). Here each block of up to 128 rows is
loaded once, the same doubling steps run between two SBUF tiles (step ``s``: a copy of the
first ``s`` columns on ScalarE, the add of the rest on VectorE), and the result is stored once.
These adds are the expansion's, in the same order and in fp32 (a 16-bit float input is widened
first and the sums rounded back): bit-identical to the tensor interpreter.

A long row (``segments``) is spread over up to 128 partitions instead, a segment of it per
partition (the row-major reshape, so loads and stores stay contiguous): each segment is scanned
as above, the segment totals are moved onto one partition by a TensorE transpose, scanned
there, and each segment adds the total of the segments before it (an exclusive prefix sum moved
back by a second transpose). The sums are then grouped differently from the expansion's (within
fp32 rounding of it, not bit-identical); 1x151936 f32: 5.8 ms -> 53 us.

decompose keeps a cumsum this path takes (capabilities.py asks ``cumsum_refusal``) and expands
the others: integer cumsums (their exact wrapping adds are wide-integer arithmetic), axes other
than the last, and rows whose segments do not fit two fp32 tiles in SBUF.
"""

from __future__ import annotations

import math

from ...ir.dtypes import float32
from ...ir.errors import BuildError
from ...nki.types import Access, DimSlice
from ...tensor.composites_index import CumsumOp
from .context import LowerContext
from .homes import HbmHome
from .peeled_loop import peeled_blocks
from .rules import item_rule
from .views import copy_home

MAX_ROW_BYTES = 65536  # per partition, of one fp32 tile (two are live)


SPREAD_PER_ROW = 1024  # elements per row (per row of the kernel) from which spreading pays


def segments(rows: int, n: int, p: int = 128) -> int:
    """Partitions per row: a long row (at least ``SPREAD_PER_ROW`` elements per row of the
    kernel, or too long for one tile) is spread over the largest divisor ``g`` of ``n`` up to
    ``p``, one block per row (per row about 15 us of carries and latency, against ~23 ns per
    element of a row scanned on one partition); else 1, rows side by side. The segments must fit
    an fp32 tile; 0 if they do not."""
    spread = n * 4 > MAX_ROW_BYTES or (rows < p // 2 and n >= SPREAD_PER_ROW * rows)
    for g in range(min(p, n) if spread else 1, 0, -1):
        if n % g == 0 and (n // g) * 4 <= MAX_ROW_BYTES:
            return g
    return 0


def cumsum_refusal(op) -> str | None:
    """Why the on-chip path cannot take ``op`` (a tensor.cumsum), or None."""
    x = op.operand(0).type
    if x.rank == 0:
        return "a 0-d operand has no axis"
    if not x.dtype.is_float or x.dtype.itemsize > 4:
        return f"{x.dtype} sums are not fp32 adds"
    if op.attrs["axis"] % x.rank != x.rank - 1:
        return "the axis is not the last"
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
    per = g if g > 1 else ctx.partitions  # partitions of one block: one spread row, or rows

    def block(r0, pr: int) -> None:
        rows_at = (DimSlice(r0, pr, 1), DimSlice(0, seg, 1))
        cur = b.alloc((pr, seg), float32, "sbuf", name="csum")
        if xdt is float32:
            b.dma_copy(dst=cur, src=Access(sv, rows_at))
        else:
            raw = b.alloc((pr, seg), xdt, "sbuf", name="csum_in")
            b.dma_copy(dst=raw, src=Access(sv, rows_at))
            b.tensor_copy(dst=cur, src=raw, engine="scalar")
        cur = _scan(b, cur, (pr,), seg)
        if g > 1:
            cur = _add_carries(b, cur, pr, seg)
        if ydt is not float32:
            out = b.alloc((pr, seg), ydt, "sbuf", name="csum_out")
            b.tensor_copy(dst=out, src=cur, engine="scalar")
            cur = out
        b.dma_copy(dst=Access(dv, rows_at), src=cur)

    total = rows * g
    peeled_blocks(b, total, per, block)


def _scan(b, cur, lead: tuple, n: int):
    """Inclusive prefix sums along the last dim of the fp32 tile ``cur`` (shape ``lead + (n,)``)
    in doubling steps between two tiles; returns the tile holding them."""
    full = tuple(DimSlice(0, k, 1) for k in lead)
    s = 1
    while s < n:
        nxt = b.alloc(lead + (n,), float32, "sbuf", name="csum")
        b.tensor_copy(
            dst=Access(nxt, full + (DimSlice(0, s, 1),)),
            src=Access(cur, full + (DimSlice(0, s, 1),)),
            engine="scalar",
        )
        b.tensor_tensor(
            Access(nxt, full + (DimSlice(s, n - s, 1),)),
            Access(cur, full + (DimSlice(s, n - s, 1),)),
            Access(cur, full + (DimSlice(0, n - s, 1),)),
            "add",
        )
        cur, s = nxt, s * 2
    return cur


def _add_carries(b, cur, pr: int, seg: int):
    """Add to each segment (partition) of one row the sum of the earlier segments: the segment
    totals (last column) transposed onto one partition by TensorE, their exclusive prefix sum
    there, transposed back and added as a per-partition scalar."""
    ps = b.alloc((1, pr), float32, "psum", name="csum_tot")
    b.nc_transpose(dst=ps, data=_cols(cur, pr, seg - 1, 1))
    tot = b.alloc((1, pr), float32, "sbuf", name="csum_tot")
    b.tensor_copy(dst=tot, src=ps)
    inc = _scan(b, tot, (1,), pr)
    exc = b.alloc((1, pr), float32, "sbuf", name="csum_carry")
    b.tensor_tensor(exc, inc, tot, "subtract")
    back = b.alloc((pr, 1), float32, "psum", name="csum_carry")
    b.nc_transpose(dst=back, data=exc)
    carry = b.alloc((pr, 1), float32, "sbuf", name="csum_carry")
    b.tensor_copy(dst=carry, src=back)
    out = b.alloc((pr, seg), float32, "sbuf", name="csum")
    b.tensor_scalar(out, cur, "add", _cols(carry, pr, 0, 1))
    return out
