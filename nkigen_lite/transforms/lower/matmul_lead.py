"""Lead M tiles of a matmul with B resident: run jointly while B arrives.

With B resident in SBUF (``MatmulEmitter.run_n_outer``) the first M tile needs every K chunk
of B, and B — megabytes — arrives at DMA pace, one group of K chunks (one DMA) at a time. One
M tile's matmuls over a group take less time than the group's transfer, so TensorE idled for
most of B's load. The first ``LEAD_TILES`` M tiles are instead staged with B's load and run
jointly: every K chunk of B, as it arrives, feeds the matmuls of all of them, each into its
own PSUM accumulators. Three tiles' matmuls over 8 chunks (bf16, 1024 columns: 3 x 16 x 213
ns = 10.2 us) outlast those chunks' 2 MiB of B and the leads' 768 KiB of Aᵀ at the DMA-
transpose rate (8.6 us), so TensorE keeps pace with B (two tiles, 6.8 us, did not: 1024 x
4096 @ (1024 x 4096).T bf16 121.6 -> 119.4 us). With B transposed on TensorE (fp32) two lead
tiles are kept: the transposes share TensorE and a PSUM bank (1024 x 1024 @ (4096 x 1024).T
f32: 540.6 us with two, 550.3 with three). The lead tiles' accumulators are live together, so
their number is capped by the PSUM banks one N block takes, and a wide N block is narrowed to
3 banks when K has ``LEAD_MIN_CHUNKS`` chunks or more so that at least two leads fit
(``lead_block``). HBM traffic and results are unchanged.
"""

from __future__ import annotations

from .matmul_dma_transpose import A_GROUP_CHUNKS

LEAD_GROUP_CHUNKS = 2  # K chunks per DMA of resident B when lead tiles run jointly
MAX_LEAD_GROUPS = 16  # DMAs (tiles, K segments) of one resident B block at most
A_COPY_ENGINE = "scalar"  # evacuates Aᵀ's transposes beside VectorE's evacuation of C
LEAD_TILES = 3  # M tiles run jointly while B arrives (1 = the plain M-tile order) ...
LEAD_TILES_ON_CHIP_B = 2  # ... or this many when B is transposed on TensorE
LEAD_MIN_CHUNKS = 4  # K chunks from which a PSUM block is narrowed to let 2 lead tiles run
STRAIGHT_M_TILES = 16  # up to this many M tiles per B block: straight code, Aᵀ staged a tile ahead


def lead_tiles(em, w: int) -> int:
    """How many M tiles of the emitter ``em`` (a MatmulEmitter with B resident in column
    blocks of ``w``) run jointly first."""
    tg = em.ctx.target
    m_tiles = -(-em.m // em.p)
    banks = -(-min(em.block, w) // tg.psum_bank_fmax)
    most = LEAD_TILES_ON_CHIP_B if em.on_chip("b") else LEAD_TILES
    return max(1, min(most, m_tiles, (tg.psum_num_banks - 1) // banks))


def lead_block(em) -> int:
    """The PSUM block (columns) of the emitter ``em`` with B resident: at most the banks that
    let two lead tiles accumulate side by side (3 of 8: one bank stays for transposes) when K
    has ``LEAD_MIN_CHUNKS`` chunks or more, so a wide N does not leave one tile alone to keep
    pace with B's arrival (2048 x 1024 @ 1024 x 4096 bf16: 4 banks, one lead tile, 237.8 us;
    3 banks, two, 228.3 us)."""
    tg = em.ctx.target
    if -(-em.k // em.p) < LEAD_MIN_CHUNKS:
        return em.block
    return min(em.block, (tg.psum_num_banks - 1) // 2 * tg.psum_bank_fmax)


def cache_groups(nk: int) -> list[int]:
    """K chunks per DMA (and tile) of one PSUM block's resident B, in load order:
    ``LEAD_GROUP_CHUNKS`` (more when that would take over ``MAX_LEAD_GROUPS`` DMAs), so the
    first matmuls wait for a small first transfer and each later one for a transfer no longer
    than the matmuls before it."""
    size = max(LEAD_GROUP_CHUNKS, -(-nk // MAX_LEAD_GROUPS))
    return [size] * -(-nk // size)


def lead_a_groups(nk: int) -> list[int]:
    """K chunks per DMA (and tile) of a lead tile's Aᵀ loaded by DMAs alone, in load order: a
    first group of ``LEAD_GROUP_CHUNKS`` (the first matmuls wait for a small transfer), then
    ``A_GROUP_CHUNKS`` at a time from the next multiple of it."""
    first = min(nk, LEAD_GROUP_CHUNKS)
    sizes = [first, A_GROUP_CHUNKS - first] if first < A_GROUP_CHUNKS else [first]
    done = sum(sizes)
    sizes += [A_GROUP_CHUNKS] * -(-max(0, nk - done) // A_GROUP_CHUNKS)
    return [x for x in sizes if x > 0]
