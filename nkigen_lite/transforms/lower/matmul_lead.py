"""Lead M tiles of a matmul with B resident: run jointly while B arrives.

With B resident in SBUF (``MatmulEmitter.run_n_outer``) the first M tile needs every K chunk
of B, and B — megabytes — arrives at DMA pace, one group of K chunks (one DMA) at a time. One
M tile's matmuls over a group take less time than the group's transfer, so TensorE idled for
most of B's load. The first ``LEAD_TILES`` M tiles are instead staged before B is loaded and
run jointly: every K chunk of B, as it arrives, feeds the matmuls of all of them, each into its
own PSUM accumulators. Two tiles' matmuls over a group of 8 chunks (bf16, 1024 columns:
2 x 16 x 213 ns) take about as long as the group's 2 MiB transfer, so TensorE keeps pace with
B. The lead tiles' accumulators are live together, so their number is capped by the PSUM
banks one N block takes (psum_plan.py: nothing else is live in PSUM while they accumulate —
Aᵀ's transposes are evacuated before B is read). HBM traffic and results are unchanged.
"""

from __future__ import annotations

from .matmul_chunks import B_GROUP_CHUNKS

LEAD_GROUP_CHUNKS = 2  # K chunks per DMA of resident B when lead tiles run jointly
MAX_LEAD_GROUPS = 16  # DMAs (tiles, K segments) of one resident B block at most
A_COPY_ENGINE = "scalar"  # evacuates Aᵀ's transposes beside VectorE's evacuation of C
LEAD_TILES = 2  # M tiles run jointly while B arrives (1 = the plain M-tile order)


def lead_tiles(em, w: int) -> int:
    """How many M tiles of the emitter ``em`` (a MatmulEmitter with B resident in column
    blocks of ``w``) run jointly first."""
    tg = em.ctx.target
    m_tiles = -(-em.m // em.p)
    banks = -(-min(em.block, w) // tg.psum_bank_fmax)
    return max(1, min(LEAD_TILES, m_tiles, (tg.psum_num_banks - 1) // banks))


def cache_groups(nk: int, lead: int) -> list[int]:
    """K chunks per DMA (and tile) of resident B, in load order: ``B_GROUP_CHUNKS`` each, or
    ``LEAD_GROUP_CHUNKS`` (more when that would take over ``MAX_LEAD_GROUPS`` DMAs) when
    ``lead`` tiles run jointly, so the first matmuls wait for a small first transfer and each
    later one for a transfer no longer than the matmuls before it."""
    size = B_GROUP_CHUNKS if lead < 2 else max(LEAD_GROUP_CHUNKS, -(-nk // MAX_LEAD_GROUPS))
    return [size] * -(-nk // size)
