"""Staging the stationary operand Aᵀ of a matmul from A in its natural (M, K) layout.

When A's K dim is the contiguous one, the M tile's rows are loaded in wide K slices — each DMA
moves ``dma_saturating_bytes_per_partition`` (4 KiB) per partition where K allows, instead of
one 128 x 128 block per DMA (256 B per partition in bf16, deep in the overhead-bound band of
the DMA model) — and every 128-column block is transposed on TensorE into a slot of a PSUM bank.
One bank holds ``psum_bank_bytes / (128 x itemsize)`` transposed blocks (8 in bf16, 4 in fp32),
evacuated to Aᵀ in SBUF by one copy. The PSUM tile is one bank, so the PSUM plan
(psum_plan.py) counts it like any other transpose tile.

A B transposed on chip (its K contiguous, not DMA-transposed) is staged the same way per tile
of resident B: one natural DMA per 128 rows of B over the tile's K chunks, the chunks'
transposes into one PSUM bank, one copy per bank (``_b_rows_transposed``).

B kept resident in SBUF ([128, ⌈K/128⌉, w], K on the partitions) is loaded by one DMA for all
its full K chunks (a strided view of B whose partition stride is one row of B and whose chunk
stride is 128 rows), instead of one DMA per K chunk and PSUM block: DMAs writing one tile wait
for each other in the schedule, so 32 small ones pay 32 fixed costs in a row.
"""

from __future__ import annotations

from ...nki.types import Access, Affine, DimSlice
from ...nki.types import ds as _ds
from .homes import HbmHome
from .matmul_chunks import ChunkTiles
from .matmul_dma_transpose import batch_row, load_transposed

WHOLE_ROW_BYTES = 16 * 1024  # a row tile of A up to this many bytes per partition: one DMA


def slice_columns(target, k: int, itemsize: int, whole_ok: bool = True) -> int:
    """K columns one natural load of A moves: all of K (rounded up to a 128-column transpose
    block) when that is at most ``WHOLE_ROW_BYTES`` per partition — one DMA per M tile — else
    (or when not ``whole_ok``: the SBUF budget of a whole resident B, MatmulEmitter.cache_width)
    the DMA's saturating bytes per partition, a multiple of the block."""
    p = target.pe_transpose_max
    whole = -(-k // p) * p
    if whole_ok and whole * itemsize <= WHOLE_ROW_BYTES:
        return whole
    return max(p, (target.dma_saturating_bytes_per_partition // itemsize) // p * p)


def natural_slice_bytes(target, k: int, itemsize: int, whole_ok: bool = True) -> int:
    """SBUF bytes per partition of one natural slice tile (for the SBUF budget)."""
    return slice_columns(target, k, itemsize, whole_ok) * itemsize


def stage_a_natural(em, idx, m0, mt: int) -> ChunkTiles:
    """Aᵀ for the M tile at ``m0`` of ``mt`` rows of the emitter ``em`` (a MatmulEmitter) from
    natural slices of A: ChunkTiles of one PSUM bank's worth of transposed blocks each."""
    b, tg, p = em.b, em.ctx.target, em.p
    dt = em.a_dt
    nk = -(-em.k // p)
    cols = slice_columns(tg, em.k, dt.itemsize, not em.narrow_a_slices)
    per_bank = max(1, tg.psum_bank_bytes // (p * dt.itemsize))
    at = ChunkTiles.alloc(b, p, nk, mt, dt, "a_t", per_bank)
    for k0 in range(0, em.k, cols):  # static: each slice fills its own Aᵀ tiles
        kc = min(cols, em.k - k0)
        nat = b.alloc((p, cols), dt, "sbuf", name="a_nat")
        b.dma_copy(dst=Access(nat, (_ds(0, mt), _ds(0, kc))), src=em._window("a_nat", idx, m0, mt, k0, kc))
        full, rem = kc // p, kc % p
        for g0 in range(0, full, per_bank):
            ng = min(per_bank, full - g0)
            _transpose_group(em, _part(at, k0 // p + g0), nat, g0, ng, p, mt, per_bank)
        if rem:
            _transpose_group(em, _part(at, k0 // p + full), nat, full, 1, rem, mt, per_bank)
    return at


def _part(at: ChunkTiles, chunk: int):
    """(tile, index within it) of K chunk ``chunk``."""
    t, c0 = at.part(chunk)
    return t, Affine.of(chunk - c0)


def _transpose_group(em, dst, nat, g0: int, ng: int, kt: int, mt: int, per_bank: int) -> None:
    """Transpose ``ng`` blocks of ``kt`` columns of ``nat`` (starting at block ``g0``) into one
    PSUM bank and copy them to ``dst`` = (tile, first chunk index)."""
    b, p = em.b, em.p
    ps = b.alloc((p, per_bank, p), nat.type.dtype, "psum", name="ps_t")
    for s in range(ng):
        b.nc_transpose(
            dst=Access(ps, (_ds(0, kt), _ds(s, 1), _ds(0, mt))),
            data=Access(nat, (_ds(0, mt), _ds((g0 + s) * p, kt))),
        )
    tile, c = dst
    b.tensor_copy(
        dst=Access(tile, (_ds(0, kt), DimSlice(c, ng, 1), _ds(0, mt))),
        src=Access(ps, (_ds(0, kt), _ds(0, ng), _ds(0, mt))),
        engine=em.a_copy_engine,
    )


def b_chunk_home(hb: HbmHome, p: int, k: int) -> HbmHome | None:
    """B (batch..., K, N) as (batch..., p, K // p, N): row r of chunk c at [r, c] (the view
    ``load_b_whole`` reads); None when K has no full chunk."""
    if k < p:
        return None
    *lead, sk, sn = hb.strides
    shape = tuple(hb.shape[:-2]) + (p, k // p, hb.shape[-1])
    return HbmHome(hb.base, hb.offset, shape, tuple(lead) + (sk, p * sk, sn))


def load_b_part(em, tile, c0: int, c1: int, idx, n0, w: int) -> None:
    """Fill ``tile`` [p, c1 - c0, w] with chunks [c0, c1) of B's columns [n0, n0 + w), K on the
    partitions: one DMA for the full chunks (the emitter's ``b_chunks`` view), the partial last
    chunk, or every chunk when B is transposed on chip, one at a time; one DMA transpose into
    a split tile when B is loaded so (matmul_dma_transpose.py)."""
    p, first = em.p, c0
    if em.dma_t["b"]:  # one DMA transpose (matmul_dma_transpose.py)
        load_transposed(em.b, em.views["b_dmat"], tile, c0, c1 - c0, batch_row(em, "b", idx, n0), w, p)
        return
    full = min(c1, em.k // p)
    if em.transpose["b"]:
        wide = min(c1, em.k // p)
        if wide > c0:  # full chunks: natural row blocks transposed a PSUM bank at a time
            _b_rows_transposed(em, tile, c0, wide, idx, n0, w)
        full = c0 = wide
    if full > c0:
        src = Access(
            em.views["b_chunks"],
            tuple(_ds(i, 1) for i in idx) + (_ds(0, p), _ds(c0, full - c0), _ds(n0, w)),
        )
        em.b.dma_copy(dst=Access(tile, (_ds(0, p), _ds(0, full - c0), _ds(0, w))), src=src)
    for c in range(full, c1):
        kt = min(p, em.k - c * p)
        dst = Access(tile, (_ds(0, kt), _ds(c - first, 1), _ds(0, w)))
        em._kmajor(dst, "b", idx, c * p, kt, Affine.of(n0), w, em.b_dt)


def _b_rows_transposed(em, tile, c0: int, c1: int, idx, n0, w: int) -> None:
    """Chunks [c0, c1) (all full) of B's columns [n0, n0 + w) into ``tile`` (its first chunk
    c0) from B natural (N, K): per block of 128 columns of B one DMA of its rows over the
    chunks' K range, TensorE transposes into the slots of a PSUM bank and one copy per bank."""
    b, p = em.b, em.p
    src_dt = em.views["b_nat"].type.dtype  # an operand cast: transpose 16-bit, cast after
    nat_dt = src_dt if em.b_dt.name == "f32" and src_dt.name in ("bf16", "f16") else em.b_dt
    per_bank = max(1, em.ctx.target.psum_bank_bytes // (p * nat_dt.itemsize))
    nc = c1 - c0
    for r in range(0, w, p):
        rw = min(p, w - r)
        nat = b.alloc((p, nc * p), nat_dt, "sbuf", name="b_nat")
        b.dma_copy(
            dst=Access(nat, (_ds(0, rw), _ds(0, nc * p))),
            src=em._window("b_nat", idx, Affine.of(n0) + r, rw, c0 * p, nc * p),
        )
        for g in range(0, nc, per_bank):
            ng = min(per_bank, nc - g)
            ps = b.alloc((p, per_bank, p), nat_dt, "psum", name="ps_t")
            for s in range(ng):
                b.nc_transpose(
                    dst=Access(ps, (_ds(0, p), _ds(s, 1), _ds(0, rw))),
                    data=Access(nat, (_ds(0, rw), _ds((g + s) * p, p))),
                )
            b.tensor_copy(
                dst=Access(tile, (_ds(0, p), _ds(g, ng), _ds(r, rw))),
                src=Access(ps, (_ds(0, p), _ds(0, ng), _ds(0, rw))),
            )
