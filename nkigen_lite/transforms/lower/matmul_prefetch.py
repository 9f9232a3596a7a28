"""Weight prefetch for a matmul whose loop nest runs once (decode: one token's row).

Used in row pipelines (chosen against the pipeline's measured SBUF peak, pipeline.py) and for
standalone matmuls of one M tile (``standalone_prefetch``).

A matmul of a single M tile reads all of B once, streamed one K chunk and N block at a time
into a rotating tile. Each load then waits for the matmuls of the load a few buffers before
it, and those wait for Aᵀ; in a row pipeline Aᵀ is the end of a chain of dependent
instructions (rmsnorm, then TensorE transposes), so the DMA engines idle while the chain runs
and B — the kernel's bytes — arrives late. When B fits SBUF beside the pipeline's tiles it is
*prefetched* instead: every piece of B gets its own tile and its DMA is issued before Aᵀ is
staged, so the weights stream at DMA bandwidth from the start and the chain runs under them.
The pieces follow the order the matmuls read them (N block outer, K chunks inner) so the
matmuls of the last block wait only for the last pieces; at most ``PIECES_PER_BLOCK`` pieces
per N block keep the emitted code small. HBM traffic is unchanged (B is read once either way).
"""

from __future__ import annotations

from .matmul_chunks import ChunkTiles
from .matmul_stage import load_b_part, natural_slice_bytes

PIECES_PER_BLOCK = 8  # DMAs (tiles) of B per N block at most
MARGIN_BYTES = 8192  # per partition, for tiles the measured peak does not name (as resident.py)


def prefetch_bytes(em) -> int | None:
    """SBUF bytes per partition B takes when prefetched, or None when the emitter's B is not a
    prefetch candidate: resident already, or read by more than one loop instance (resident.py
    weighs that case), or under batch loops."""
    if em.resident or em.loops or em.m > em.p or em.b_tail:
        return None
    return -(-em.k // em.p) * em.n * em.b_dt.itemsize


def standalone_prefetch(em) -> bool:
    """True when a standalone matmul's B is prefetched: a candidate whose B fits 7/8 of a
    partition beside the nest's other tiles (Aᵀ, two C blocks and, when A is transposed on
    chip, two natural slices of A: ``MatmulEmitter.cache_width``'s budget)."""
    size = prefetch_bytes(em)
    if size is None:
        return False
    tg = em.ctx.target
    nk = -(-em.k // em.p)
    others = nk * em.p * em.a_dt.itemsize + 2 * em.block * em.c_dt.itemsize
    if em.on_chip("a"):
        others += 2 * natural_slice_bytes(tg, em.k, em.a_dt.itemsize)
    return size <= (tg.sbuf_bytes_per_partition * 7) // 8 - others


def choose_prefetch(emitters: list, used_bytes: int, sbuf_bytes: int) -> list:
    """The emitters whose B is prefetched: candidates in order while their bytes fit the room
    left beside the pipeline's measured peak ``used_bytes``."""
    room = sbuf_bytes - used_bytes - MARGIN_BYTES
    out = []
    for em in emitters:
        size = prefetch_bytes(em)
        if size is not None and size <= room:
            room -= size
            out.append(em)
    return out


def load_prefetch(em, idx) -> dict:
    """Issue the DMAs of all of B for the emitter ``em``: {N block offset: ChunkTiles of that
    block's columns}, in the order the matmuls read them."""
    nk = -(-em.k // em.p)
    group = -(-nk // PIECES_PER_BLOCK)
    out = {}
    for n0 in range(0, em.n, em.block):
        w = min(em.block, em.n - n0)
        tiles = ChunkTiles.alloc(em.b, em.p, nk, w, em.b_dt, "w_prefetch", group, split=em.b_split)
        for tile, c0, c1 in tiles.parts:
            load_b_part(em, tile, c0, c1, idx, n0, w)
        out[n0] = tiles
    return out
