"""K-major matmul operands loaded by DMA transposes (``nki.dma_transpose``) instead of TensorE.

An operand whose K dim is the contiguous one (A of ``a @ b`` always in row-major A; B of
``a @ b.T``, the ``x @ W.T`` of a Linear layer with W stored (out, in)) must be brought K-major:
K on the partitions. On TensorE that is one ``nc_transpose`` per 128 x 128 block plus a PSUM
evacuation copy; for a 2-byte dtype the DMA engines can transpose on the way HBM -> SBUF
instead (facts §1.6, ~0.9 of the DMA rate), so TensorE runs only the matmuls, no PSUM bank
holds transposes and VectorE / ScalarE copy nothing out.

A hardware-DGE transpose reads ``[16, A, B, 128]`` and writes ``[128, A, B, 16]``
(``dst[c, a, b, i] = src[i, a, b, c]``, verify_dma_transpose.py). For an operand X (rows, K)
the source view is ``src[i, c, r, k] = X[16 r + i, 128 c + k]`` (``transposed_source``), so
the destination ``[128, chunks, rows / 16, 16]`` holds Xᵀ of K chunk ``c`` at ``[:, c]``, rows
in order along the flattened ``(rows / 16, 16)`` dims: the same bytes as the ``[128, chunks,
rows]`` tiles the matmul reads otherwise (``ChunkTiles`` with ``split``). Conditions
(``dma_transposable``): a 2-byte operand staged in its own dtype (the DMA moves raw bytes),
K a multiple of 128 (every chunk full: the transpose's ``src.shape[-1] == 128``), the row
count a multiple of 16 and no batch dims (the source view is 4-D already).
"""

from __future__ import annotations

from ...nki.types import Access, DimSlice
from ...nki.types import ds as _ds
from .homes import HbmHome
from .matmul_chunks import ChunkTiles, div_affine

DGE_ROWS = 16  # src.shape[0] of a hardware-DGE transpose (and dst's innermost dim)
A_GROUP_CHUNKS = 8  # K chunks of Aᵀ per DMA transpose (and tile)


def dma_transposable(em, which: str, rows: int, nat: HbmHome | None) -> bool:
    """True when operand ``which`` ("a" or "b") of the MatmulEmitter ``em``, transposed on chip
    otherwise, is loaded by DMA transposes: the conditions of the module docstring. ``rows`` is
    the operand's non-K extent (M or N), ``nat`` its natural (rows, K) home."""
    if not em.transpose[which] or nat is None or em.batch:
        return False
    dt = em.a_dt if which == "a" else em.b_dt
    p = em.p
    return (
        dt.itemsize == 2
        and nat.base.type.dtype == dt
        and nat.strides[-1] == 1
        and em.k % p == 0
        and rows % DGE_ROWS == 0
    )


def transposed_source(nat: HbmHome, p: int) -> HbmHome:
    """The view ``[16, K / p, rows / 16, p]`` of the natural (rows, K) home ``nat``: element
    ``[i, c, r, k]`` is ``X[16 r + i, p c + k]``."""
    rows, k = nat.shape
    rs = nat.strides[0]
    return HbmHome(nat.base, nat.offset, (DGE_ROWS, k // p, rows // DGE_ROWS, p), (rs, p, DGE_ROWS * rs, 1))


def load_transposed(b, src, tile, c0, nc: int, r0, nrows: int, p: int) -> None:
    """One DMA transpose: ``nc`` K chunks from chunk ``c0`` of rows ``[r0, r0 + nrows)`` of the
    operand whose ``transposed_source`` view is ``src`` into the split tile ``[p, nc, nrows /
    16, 16]`` (``c0`` and ``r0``, a multiple of 16, are ints or loop-index expressions)."""
    r = DimSlice(div_affine(r0, DGE_ROWS), nrows // DGE_ROWS, 1)
    b.dma_transpose(
        dst=Access(tile, (_ds(0, p), _ds(0, nc), _ds(0, nrows // DGE_ROWS), _ds(0, DGE_ROWS))),
        src=Access(src, (_ds(0, DGE_ROWS), _ds(c0, nc), r, _ds(0, p))),
    )


def stage_a_dma(em, m0, mt: int) -> ChunkTiles:
    """Aᵀ of the M tile at ``m0`` (``mt`` rows) of the MatmulEmitter ``em`` by DMA transposes:
    ChunkTiles of ``A_GROUP_CHUNKS`` K chunks each, one DMA per tile, so the first matmuls wait
    only for their own group."""
    nk = em.k // em.p
    at = ChunkTiles.alloc(em.b, em.p, nk, mt, em.a_dt, "a_t", A_GROUP_CHUNKS, split=DGE_ROWS)
    for tile, c0, c1 in at.parts:
        load_transposed(em.b, em.views["a_dmat"], tile, c0, c1 - c0, m0, mt, em.p)
    return at
