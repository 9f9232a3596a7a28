"""A reversal of the last axis (``np.flip(x, -1)``, ``x[..., ::-1]``) on chip.

HBM views have positive strides only, so a reversed last axis was copied one column per DMA
(64x4096 f32: 4,096 DMAs of 4-byte descriptors, 90x the roofline). Here the rows are loaded
with their columns in natural order and reversed 128 columns at a time by exact data movement:

- a TensorE transpose puts the block's columns on partitions (column ``32q + i`` of the block
  on partition ``32q + i``);
- ``nki.stream_shuffle`` reverses the partitions within each quadrant of 32 (``i -> 31 - i``);
- second transposes, one per quadrant of 32 partitions, put them back on the free axis, each
  quadrant written at its mirrored place (and each block at the block's mirrored place) of a
  PSUM bank holding 4 blocks; one ScalarE copy per bank brings them to the output tile
  (quadrant and block order reversal are addressing).

No arithmetic touches the values: infinities, NaN payloads and -0.0 are kept bit for bit (a
matmul against an exchange matrix would turn them into NaN or +0.0 through ``0 * inf`` and
``-0.0 + 0.0``). Fewer than 128 rows are split into ``s`` pieces per row on consecutive
partitions (the row-major reshape: loads and stores stay contiguous on all 128 partitions);
output piece ``h`` is the reversal of input piece ``s - 1 - h``, a swap the shuffles make by
reading the transposed block's free axis with stride ``s``. Rows are read whole and written
whole, each byte once; a single block of rows is loaded and stored in column chunks of 1 KiB
per partition whose stages are skewed, so that loads, engines and stores overlap (64x4096 f32:
523.5 -> 11.4 us scheduled, 1.96x the roofline; docs/lowering.md). Float data of 2 or 4 bytes
(the transposes pass through the PE array), rows of a multiple of 128 elements. With every axis
reversed (``np.flip(x)`` of a whole tensor) the rows are gathered in reverse order by
``nki.dma_gather`` (iota indices), one row per partition (256x512 f32: 915x -> 3.79x). Other
reversals keep the per-index DMA loop (views.py).
"""

from __future__ import annotations

from ...ir.dtypes import int32
from ...nki.types import Access, Affine, DimSlice
from .homes import HbmHome
from .peeled_loop import peeled_blocks

BLOCK = 128  # columns reversed per transpose pair
QUAD = 32  # partitions a stream_shuffle permutes within
GROUP = 4  # blocks per PSUM tile of the transposes back (512 fp32 columns: one bank)
BANK_BYTES = 2048  # per partition of one PSUM bank
CHUNK_BYTES = 1024  # per partition of one loaded column chunk (rows of up to 4 KiB: whole)
WHOLE_BYTES = 4096  # rows of a looped block up to this size are loaded whole
REVERSE = tuple(range(QUAD - 1, -1, -1))


def _pieces(rows: int, n: int, p: int) -> int:
    """Pieces per row: the largest power of two putting the rows on at most ``p`` partitions
    with pieces of whole 128-column blocks (1 for ``p`` rows or more)."""
    s = 1
    while rows * s * 2 <= p and (n // (s * 2)) % BLOCK == 0 and n % (s * 2) == 0:
        s *= 2
    return s


def _all(t, p: int, start: int, n: int, step: int = 1) -> Access:
    return Access(t, (DimSlice(0, p, 1), DimSlice(start, n, step)))


def reverse_last(ctx, src: HbmHome, dst: HbmHome, every_axis: bool = False) -> bool:
    """Copy ``src`` into ``dst`` (same shape) with the last axis reversed (with ``every_axis``,
    every axis: the rows, flattened, are also read in reverse order, by a ``dma_gather`` of the
    whole source tensor with iota indices); False (nothing emitted) when this path does not
    apply."""
    shape = tuple(src.shape)
    dt = src.base.type.dtype
    if not shape or tuple(dst.shape) != shape or not dt.is_float or dt.itemsize not in (2, 4):
        return False
    if dst.base.type.dtype is not dt:
        return False
    n = shape[-1]
    rows = 1
    for d in shape[:-1]:
        rows *= d
    p = ctx.partitions
    if n % BLOCK or rows == 0:
        return False
    s = _pieces(rows, n, p) if not every_axis else 1
    if every_axis and not src.is_whole_base:  # the gather reads a whole tensor
        return False
    w = n // s
    sv, dv = src.reshape((rows * s, w)), dst.reshape((rows * s, w))
    if sv is None or dv is None or sv.strides[1] != 1 or dv.strides[1] != 1:
        return False
    sview, dview = ctx.view(sv), ctx.view(dv)
    # small chunks pipeline one block's loads, reversal and stores (costlier descriptors); a
    # loop over row blocks of short rows overlaps whole rows across iterations instead
    looped = rows * s > p
    size = WHOLE_BYTES if looped and w * dt.itemsize <= WHOLE_BYTES else CHUNK_BYTES
    chunk = max(BLOCK, min(w, size // dt.itemsize // BLOCK * BLOCK))
    while w % chunk:
        chunk -= BLOCK
    b = ctx.b
    # chunks loaded at once: each holds its loaded and its output tile and the gather's index
    # column (the shuffled blocks of the few chunks between stages come on top)
    per_chunk = 2 * chunk * dt.itemsize + 4
    window = max(1, ctx.target.sbuf_bytes_per_partition * 3 // 8 // per_chunk) * chunk

    def block(r0, pr: int) -> None:
        for w0 in range(0, w, window):
            chunks_of(r0, pr, w0, min(w, w0 + window))

    def chunks_of(r0, pr: int, lo: int, hi: int) -> None:
        """Columns [lo, hi) of the block's rows: every load first, then the stages."""
        chunks = []
        for c0 in range(lo, hi, chunk):  # every load first: they queue ahead of the compute
            x = b.alloc((pr, chunk), dt, "sbuf", name="rev_in")
            cols = DimSlice(c0, chunk, 1)
            if every_axis:  # source row rows-1-r for output row r
                idx = b.alloc((pr, 1), int32, "sbuf", name="rev_idx")
                b.iota(idx, [[0, 1]], offset=Affine.of(r0) * -1 + (rows - 1), channel_multiplier=-1)
                b.dma_gather(dst=x, src=Access(sview, (DimSlice(0, rows, 1), cols)), index=idx)
            else:
                b.dma_copy(dst=x, src=Access(sview, (DimSlice(r0, pr, 1), cols)))
            chunks.append(_Chunk(b, x, pr, s, chunk, dt))

        def store(done: int) -> None:
            c0 = lo + done * chunk
            out_at = (DimSlice(r0, pr, 1), DimSlice(w - c0 - chunk, chunk, 1))
            b.dma_copy(dst=Access(dview, out_at), src=chunks[done].o)

        _run_stages(chunks, store)

    peeled_blocks(b, rows * s, (p // s) * s, block)
    return True


def _run_stages(chunks: list, store) -> None:
    """The stages of chunk k one step after those of chunk k - 1, so that every in-order engine
    has the next chunk's work queued while the previous chunk's results drain; ``store(k)``
    once chunk k's last stage is issued."""
    stages = _Chunk.STAGES
    for step in range(len(chunks) + len(stages) - 1):
        for k in range(len(chunks) - 1, -1, -1):
            if 0 <= step - k < len(stages):
                getattr(chunks[k], stages[step - k])()
        done = step - len(stages) + 1
        if 0 <= done < len(chunks):
            store(done)


class _Chunk:
    """One loaded tile ``x`` ((pr, chunk)) reversed block by block into ``o``, in four stages:
    the transposes (columns onto partitions), the shuffles (reversal within quadrants, piece ``h``
    from piece ``s - 1 - h``), the transposes back (each quadrant of 32 to its mirrored place in a
    PSUM bank of 4 blocks) and the copies out of PSUM (ScalarE)."""

    STAGES = ("transpose", "shuffle", "transpose_back", "copy")

    def __init__(self, b, x, pr: int, s: int, chunk: int, dt):
        self.b, self.x, self.pr, self.s, self.chunk, self.dt = b, x, pr, s, chunk, dt
        self.starts = range(0, chunk, BLOCK)
        self.o = b.alloc((pr, chunk), dt, "sbuf", name="rev_out")

    def transpose(self) -> None:
        b, pr = self.b, self.pr
        per = max(1, BANK_BYTES // (pr * self.dt.itemsize))  # blocks per PSUM tile (one bank)
        self.ts = []
        for i, a in enumerate(self.starts):
            if i % per == 0:
                t = b.alloc((BLOCK, pr * min(per, len(self.starts) - i)), self.dt, "psum", name="rev_t")
            j = (i % per) * pr
            b.nc_transpose(dst=_all(t, BLOCK, j, pr), data=_all(self.x, pr, a, BLOCK))
            self.ts.append((t, j))

    def shuffle(self) -> None:
        b, pr, s = self.b, self.pr, self.s
        self.us = []
        for t, j in self.ts:
            u = b.alloc((BLOCK, pr), self.dt, "sbuf", name="rev_sh")
            for h in range(s):
                src = _all(t, BLOCK, j + s - 1 - h, pr // s, s)
                b.stream_shuffle(dst=_all(u, BLOCK, h, pr // s, s), src=src, mask=REVERSE)
            self.us.append(u)

    def transpose_back(self) -> None:
        b, pr, chunk = self.b, self.pr, self.chunk
        group = GROUP * BLOCK
        self.vs = []
        for g0 in range(0, chunk, group):  # out columns [g0, g0 + gw) of o
            gw = min(group, chunk - g0)
            v = b.alloc((pr, gw), self.dt, "psum", name="rev_back")
            for a, u in zip(self.starts, self.us):
                at = chunk - a - BLOCK - g0  # the block's mirrored place in this group
                if not 0 <= at < gw:
                    continue
                for q in range(BLOCK // QUAD):  # quadrant q lands QUAD * q from the block's end
                    dst = _all(v, pr, at + BLOCK - QUAD * (q + 1), QUAD)
                    b.nc_transpose(dst=dst, data=Access(u, (DimSlice(QUAD * q, QUAD, 1), DimSlice(0, pr, 1))))
            self.vs.append((g0, gw, v))

    def copy(self) -> None:
        for g0, gw, v in self.vs:
            self.b.tensor_copy(
                dst=_all(self.o, self.pr, g0, gw), src=_all(v, self.pr, 0, gw), engine="scalar"
            )
