"""HBM -> HBM copy of a broadcast (``np.repeat(k, 4, axis=0)``, ``broadcast_to`` materialised)
through SBUF: each distinct block is loaded once and stored once per repeat.

A source view with a stride-0 dim reads every repeated element from HBM again (one HBM -> HBM
DMA: ``repeats x`` the source bytes read, plus the result written). When the dims after the
last broadcast dim form a contiguous block of ``128 * F`` elements in both source and
destination, the block is loaded as a 128-partition tile (chunks of at most ``CHUNK_BYTES`` per
partition) for every index of the other outer dims, and stored to each broadcast index: the
source is read once, the result written once.
"""

from __future__ import annotations

import math

from ...ir.types import row_major_strides
from ...nki.types import Access, Affine, DimSlice
from .homes import HbmHome
from .peeled_loop import peeled_blocks

CHUNK_BYTES = 16384  # per partition, of one tile


def _contiguous(shape, strides) -> bool:
    return all(n == 1 or s == r for n, s, r in zip(shape, strides, row_major_strides(tuple(shape))))


def copy_broadcast(ctx, src: HbmHome, dst: HbmHome) -> bool:
    """Emit ``dst <- src`` (same dtype and size, elements paired row-major, ``src`` with a
    stride-0 dim) as loads of the distinct blocks and one store per repeat; False (nothing
    emitted) when it does not apply."""
    shape = tuple(src.shape)
    dt = src.base.type.dtype
    if dst.base.type.dtype is not dt or math.prod(dst.shape) != math.prod(shape):
        return False
    if tuple(dst.shape) != shape:
        dst = dst.reshape(shape)
        if dst is None:
            return False
    bdims = [d for d, (n, s) in enumerate(zip(shape, src.strides)) if s == 0 and n > 1]
    if not bdims:
        return False
    last = max(bdims)
    inner = shape[last + 1 :]
    n_inner = math.prod(inner)
    p = ctx.partitions
    if n_inner % p or not _contiguous(inner, src.strides[last + 1 :]):
        return False
    if not _contiguous(inner, dst.strides[last + 1 :]):
        return False
    f = n_inner // p
    fc = max(1, min(f, CHUNK_BYTES // dt.itemsize))
    outer = shape[: last + 1]

    def flat(h: HbmHome):
        return ctx.view(HbmHome(h.base, h.offset, outer + (p, f), tuple(h.strides[: last + 1]) + (f, 1)))

    sv, dv = flat(src), flat(dst)
    b = ctx.b

    def chunk(lead, f0, w):
        t = b.alloc((p, w), dt, "sbuf", name="repeated")
        tile = Access(t, (DimSlice(0, p, 1), DimSlice(0, w, 1)))
        window = (DimSlice(f0, w, 1),)
        src_lead = tuple(DimSlice(0, 1, 1) if d in bdims else x for d, x in enumerate(lead))
        b.dma_copy(dst=tile, src=Access(sv, src_lead + (DimSlice(0, p, 1),) + window))
        stores(lead, 0, tile, window)

    def stores(lead, d, tile, window):
        """One store per index of the broadcast dims (the loaded dims are fixed in ``lead``)."""
        if d == len(bdims):
            b.dma_copy(dst=Access(dv, lead + (DimSlice(0, p, 1),) + window), src=tile)
            return
        bd = bdims[d]
        with b.fori_loop(0, shape[bd]) as i:
            lead = lead[:bd] + (DimSlice(Affine.of(i), 1, 1),) + lead[bd + 1 :]
            stores(lead, d + 1, tile, window)

    def nest(d, lead):
        if d == len(outer):
            peeled_blocks(b, f, fc, lambda f0, w: chunk(lead, f0, w))
            return
        if d in bdims or shape[d] == 1:
            nest(d + 1, lead + (DimSlice(0, 1, 1),))
            return
        with b.fori_loop(0, shape[d]) as i:
            nest(d + 1, lead + (DimSlice(Affine.of(i), 1, 1),))

    nest(0, ())
    return True
