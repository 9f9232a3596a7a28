"""tensor.cumsum of floats along the first axis (``np.cumsum(x, 0)``), on chip.

Expanded, the composite's log2(R) doubling steps each went through HBM scratch (2048x64 f32:
16x the minimum traffic, 40x the roofline). Here the (R, C) input (the other axes flattened into
C) is read once and written once, and the prefix sums run along the free axis of a transposed
tile, one ``nki.tensor_tensor_scan`` per PSUM bank:

- the rows are split into ``H = 128 // C`` consecutive parts, part ``h`` loaded by one DMA as
  (128, J, C) with rows ``R/H * h + J * p + j`` on partition p (J rows of C contiguous per
  partition);
- TensorE transposes of the (h, c) columns of one j for a range of p put column ``c`` of part
  ``h`` on partition ``C * h + c`` with its rows in order along the free axis (PSUM);
- the scans run from PSUM into SBUF, each bank from the last column of the one before;
- part h adds the totals of the parts before it for its column: the parts' last columns
  transposed onto one partition, shifted by one part (sums of the earlier ones), transposed
  back, added per partition;
- transposes back, a PSUM bank at a time with one copy each, and one store per part (part 0
  first: it needs no carry). 2048x64 f32: 117.1 -> 14.1 us scheduled (40x -> 4.84x the
  roofline), traffic 16x -> 1.0x (docs/lowering.md).

Transposes, scans and adds move or sum values: infinities and NaNs stay in their column and
after their row. Sums are grouped by part (within fp32 rounding of NumPy's sequential order).
Taken for float inputs with C = 32, 64 or 128, R a multiple of ``128 * H`` and J at most
``MAX_ROWS_PER_PARTITION`` (cumsum.py's refusal asks ``columns_refusal``).
"""

from __future__ import annotations

import math

from ...ir.dtypes import float32
from ...nki.types import Access, DimSlice

BANK = 512  # fp32 columns of one PSUM bank
MAX_ROWS_PER_PARTITION = 16  # j: a bank then takes 512 / j >= 32 source partitions


def _shape(x) -> tuple[int, int]:
    r = x.shape[0]
    return r, math.prod(x.shape[1:])


def columns_refusal(x, p: int = 128) -> str | None:
    """Why the first-axis path cannot take an operand of type ``x``, or None."""
    if x.rank < 2:
        return "a 1-d operand scans its only axis"
    r, c = _shape(x)
    if c not in (p // 4, p // 2, p):
        return f"{c} columns are not {p // 4}, {p // 2} or {p} (whole quadrants per part)"
    h = p // c
    if r % (p * h):
        return f"{r} rows are not a multiple of {p * h}"
    j = r // h // p
    if j > MAX_ROWS_PER_PARTITION or (r // h > BANK and BANK % j):
        return f"{j} rows per partition and part: not 1 to {MAX_ROWS_PER_PARTITION} whole per PSUM bank"
    return None


def _acc(t, p0: int, np_: int, f0: int, nf: int, step: int = 1) -> Access:
    return Access(t, (DimSlice(p0, np_, 1), DimSlice(f0, nf, step)))


def emit_columns(ctx, src, dst, shape, xdt, ydt) -> None:
    """The prefix sums along dim 0 of the contiguous home ``src`` (shape ``shape``) into ``dst``."""
    b, p = ctx.b, ctx.partitions
    r = shape[0]
    c = math.prod(shape[1:])
    h = p // c
    part = r // h  # rows per part
    j = part // p  # rows per partition per part
    sv = ctx.view(src.reshape((h, p, j * c)).transpose((1, 0, 2)))  # (p, h, j * c): one load
    dv = ctx.view(dst.reshape((h, p, j * c)))
    x = b.alloc((p, h, j * c), xdt, "sbuf", name="ccs_in")
    whole = (DimSlice(0, p, 1), DimSlice(0, h, 1), DimSlice(0, j * c, 1))
    b.dma_copy(dst=Access(x, whole), src=Access(sv, whole))
    s = b.alloc((p, part), float32, "sbuf", name="ccs")
    ones = b.alloc((p, 1), float32, "sbuf", name="ccs_one")
    b.memset(dst=ones, value=1.0)
    rows_per_bank = min(part, BANK)
    init = 0.0
    for f0 in range(0, part, rows_per_bank):  # the free columns [f0, f0 + bank) of s
        pbank = b.alloc((p, rows_per_bank), xdt, "psum", name="ccs_t")
        p0, pn = f0 // j, rows_per_bank // j  # source partitions whose rows land here
        for jj in range(j):  # x[p0:p0+pn, :, jj, :] -> rows j*p + jj of every part
            data = Access(x, (DimSlice(p0, pn, 1), DimSlice(0, h, 1), DimSlice(jj * c, c, 1)))
            b.nc_transpose(dst=_acc(pbank, 0, p, jj, pn, j), data=data)
        every = _acc(ones, 0, p, 0, rows_per_bank, 0)
        b.tensor_tensor_scan(dst=_acc(s, 0, p, f0, rows_per_bank), data0=every, data1=pbank, initial=init)
        init = _acc(s, 0, p, f0 + rows_per_bank - 1, 1)
    _store_part(b, s, dv, 0, p, c, j, ydt)  # part 0 needs no carry: stored first
    if h > 1:
        _add_part_totals(b, s, p, c, h, part)
    for k in range(1, h):
        _store_part(b, s, dv, k, p, c, j, ydt)


def _store_part(b, s, dv, k: int, p: int, c: int, j: int, ydt) -> None:
    """Part k of the scanned tile ``s`` transposed back by PSUM banks (one copy each) and
    stored with one DMA."""
    o = b.alloc((p, j * c), ydt, "sbuf", name="ccs_out")
    per = max(1, BANK // c)  # row offsets jj per PSUM bank
    for j0 in range(0, j, per):
        nj = min(per, j - j0)
        back = b.alloc((p, nj * c), float32, "psum", name="ccs_back")
        for jj in range(j0, j0 + nj):
            b.nc_transpose(dst=_acc(back, 0, p, (jj - j0) * c, c), data=_acc(s, c * k, c, jj, p, j))
        eng = "scalar" if k % 2 == 0 else "vector"
        b.tensor_copy(dst=_acc(o, 0, p, j0 * c, nj * c), src=back, engine=eng)
    b.dma_copy(dst=Access(dv, (DimSlice(k, 1, 1), DimSlice(0, p, 1), DimSlice(0, j * c, 1))), src=o)


def _add_part_totals(b, s, p: int, c: int, h: int, part: int) -> None:
    """Add to part k's columns (partitions c*k ...) the totals of parts 0 .. k-1 of the same
    column: the last column of ``s`` transposed onto one partition, summed part by part one
    part on, transposed back and added per partition (partitions of part 0 add 0)."""
    tot = b.alloc((1, p), float32, "psum", name="ccs_tot")
    b.nc_transpose(dst=tot, data=_acc(s, 0, p, part - 1, 1))
    ex = b.alloc((1, p), float32, "sbuf", name="ccs_carry")
    b.memset(dst=_acc(ex, 0, 1, 0, c), value=0.0)
    b.tensor_copy(dst=_acc(ex, 0, 1, c, c), src=_acc(tot, 0, 1, 0, c))
    for k in range(2, h):  # carry of part k = carry of part k-1 + total of part k-1
        b.tensor_tensor(
            _acc(ex, 0, 1, c * k, c), _acc(ex, 0, 1, c * (k - 1), c), _acc(tot, 0, 1, c * (k - 1), c), "add"
        )
    back = b.alloc((p, 1), float32, "psum", name="ccs_carry")
    b.nc_transpose(dst=back, data=ex)
    for k in range(1, h):  # part k's partitions, a quadrant-aligned range each (one engine:
        at = _acc(s, c * k, c, 0, part)  # two would wait on each other writing one tile)
        b.tensor_scalar(at, at, "add", _acc(back, c * k, c, 0, 1), engine="scalar")
