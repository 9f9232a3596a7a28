"""A concat along a narrow last axis (``np.stack([a, b], -1)`` of an interleaved RoPE, pieces
of a few columns each) assembled on chip.

Copying each part into its slice of the result writes runs of a part's width (4 bytes for a
stacked column): one DMA descriptor per element. Instead the result, flattened to ``(M, W)``
rows, is cut into blocks of up to 128 partitions x ``f`` rows; per block every part is loaded
contiguously (``f * w`` elements per partition), an engine copy places it at its columns of one
SBUF tile, and one DMA stores the tile contiguously (``f * W`` elements per partition).
"""

from __future__ import annotations

from ...nki.types import Access, DimSlice
from .homes import HbmHome
from .peeled_loop import peeled_blocks

MAX_ROW_BYTES = 64  # result rows at most this wide (wider rows make fine descriptors anyway)
TILE_BYTES = 8192  # per partition, of the assembled tile


def _rows_per_partition(m: int, row_bytes: int, p: int) -> int:
    """The largest ``f`` dividing ``m`` with ``f * row_bytes <= TILE_BYTES``, preferring at
    least ``p`` blocks' worth of rows to fill the partitions."""
    best = 1
    for f in range(1, TILE_BYTES // row_bytes + 1):
        if m % f == 0 and (m // f >= p or f == 1):
            best = f
    return best


def concat_last_on_chip(ctx, parts: list[HbmHome], dst: HbmHome) -> bool:
    """Emit the concat of ``parts`` along the last axis into ``dst`` as described above; False
    (nothing emitted) when it does not apply."""
    shape, dt = dst.shape, dst.base.type.dtype
    width = shape[-1] if shape else 0
    if len(shape) < 2 or len(parts) < 2 or width * dt.itemsize > MAX_ROW_BYTES:
        return False
    m = 1
    for n in shape[:-1]:
        m *= n
    flat_dst = dst.reshape((m, width))
    flats = [h.reshape((m, h.shape[-1])) for h in parts]
    if flat_dst is None or any(h is None or h.base.type.dtype is not dt for h in flats):
        return False
    if flat_dst.strides != (width, 1) or any(h.strides != (h.shape[-1], 1) for h in flats):
        return False
    p = ctx.partitions
    f = _rows_per_partition(m, width * dt.itemsize, p)
    blocks = m // f
    dv = ctx.view(HbmHome(flat_dst.base, flat_dst.offset, (blocks, f * width), (width * f, 1)))
    pviews = []
    for h in flats:
        w = h.shape[-1]
        pviews.append((ctx.view(HbmHome(h.base, h.offset, (blocks, f * w), (w * f, 1))), w))
    b = ctx.b

    def body(r0, pr):
        out = b.alloc((pr, f, width), dt, "sbuf", name="cat_rows")
        col = 0
        for view, w in pviews:
            t = b.alloc((pr, f, w), dt, "sbuf", name="cat_part")
            src = Access(t, (DimSlice(0, pr, 1), DimSlice(0, f, 1), DimSlice(0, w, 1)))
            b.dma_copy(dst=src, src=Access(view, (DimSlice(r0, pr, 1), DimSlice(0, f * w, 1))))
            b.tensor_copy(
                dst=Access(out, (DimSlice(0, pr, 1), DimSlice(0, f, 1), DimSlice(col, w, 1))), src=src
            )
            col += w
        flat = Access(out, (DimSlice(0, pr, 1), DimSlice(0, f, 1), DimSlice(0, width, 1)))
        b.dma_copy(dst=Access(dv, (DimSlice(r0, pr, 1), DimSlice(0, f * width, 1))), src=flat)

    peeled_blocks(b, blocks, p, body)
    return True
