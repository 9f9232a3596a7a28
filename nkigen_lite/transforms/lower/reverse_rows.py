"""A reversal of one axis that is not the last (``np.flip(x, 0)``, ``x[:, ::-1]`` of a 3-D x),
as indirect DMAs.

HBM views have positive strides only, so each index of the reversed axis was one DMA (np.flip
of 2048x512 f32 along axis 0: 2,048 row DMAs, 9.3x the roofline). The reversed axis ``d`` and
the axes after it split the source into rows of ``B`` contiguous elements (the axes after d);
per block of up to 128 output rows one ``nki.dma_gather`` reads the source rows in reverse
order, their indices made by one GpSimd iota (``a·n + n − 1 − i`` for output row ``(a, i)``,
affine in the loop variables), and one DMA stores the block. Rows are moved whole, bit for bit.
Taken when the source is a whole kernel input or HBM allocation (the gather's indirect side)
and blocks stay within one index of the axes before d (n a multiple of 128, or no such axes);
others keep the per-index DMA loop (views.py).

The cost model charges a gather as a hardware-DGE ``dma_copy`` of its bytes; the software DGE
that issues indirect DMAs is not modelled (docs/costmodel.md, "Not modelled").
"""

from __future__ import annotations

import math

from ...ir.dtypes import int32
from ...nki.types import Access, Affine, DimSlice
from .homes import HbmHome
from .peeled_loop import peeled_blocks

ROW_BYTES = 16384  # per partition of one gathered tile; wider rows are gathered in column chunks


def reverse_rows(ctx, src: HbmHome, dst: HbmHome, d: int) -> bool:
    """Copy ``src`` (a whole base, same shape as ``dst``) into ``dst`` with dim ``d`` (not the
    last) reversed; False (nothing emitted) when this path does not apply."""
    shape = tuple(src.shape)
    if tuple(dst.shape) != shape or not 0 <= d < len(shape) - 1 or not src.is_whole_base:
        return False
    dt = src.base.type.dtype
    if dst.base.type.dtype is not dt:
        return False
    outer, n, row = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])
    p = ctx.partitions
    if outer > 1 and n % p:
        return False
    table = HbmHome.whole(src.base).reshape((outer * n, row))
    out = dst.reshape((outer * n, row))
    if table is None or out is None or out.strides[1] != 1:
        return False
    tv, ov = ctx.view(table), ctx.view(out)
    fc = max(1, ROW_BYTES // dt.itemsize)
    b = ctx.b

    def rows(a, i0, pr: int) -> None:
        base = Affine.of(a) * n  # the first row of outer index a
        idx = b.alloc((pr, 1), int32, "sbuf", name="rev_rows")  # row a*n + n-1-i for output (a, i)
        b.iota(idx, [[0, 1]], offset=base + (n - 1) - i0, channel_multiplier=-1)
        first = base + i0
        for f0 in range(0, row, fc):
            nf = min(fc, row - f0)
            t = b.alloc((pr, nf), dt, "sbuf", name="rev_rows")
            b.dma_gather(dst=t, src=Access(tv, (DimSlice(0, outer * n, 1), DimSlice(f0, nf, 1))), index=idx)
            b.dma_copy(dst=Access(ov, (DimSlice(first, pr, 1), DimSlice(f0, nf, 1))), src=t)

    if outer == 1:
        peeled_blocks(b, n, p, lambda i0, pr: rows(0, i0, pr))
    else:
        with b.fori_loop(0, outer) as a:
            peeled_blocks(b, n, p, lambda i0, pr: rows(a, i0, pr))
    return True
