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
count a multiple of 16 and batch dims only where they continue the rows in memory (a contiguous
``(..., rows, K)`` operand: the source view is 4-D already, so the batch dims are folded into
the rows of one ``(batch x rows, K)`` matrix and a batch instance's DMAs start at row
``instance x rows``: ``batch_row``), and not all of extent 1.

**Tail window** (``tail_window``): a streamed B whose K leaves a partial last chunk of ``r`` =
32 or 64 columns (gpt-oss: K = 2880 = 22.5 chunks) is still DMA-transposed. Its full chunks go
as above; the last chunk is the 128-column window ``[K - 128, K)`` (``tail_source``), whose
transpose holds the partial chunk on partitions ``128 - r .. 127`` -- an engine access of r <= 64
partitions may start there (a half or quadrant start). Aᵀ of those K rows is staged the same way
(the window transposed whole, ``MatmulEmitter._stage_a_tail``) and the last matmul contracts over
those partitions only, so the overlapping columns are read but never summed twice. Only a
standalone matmul of one M tile with B streamed per K chunk takes it (no prefetch, no resident
B); the window re-reads ``128 - r`` columns of B: HBM traffic ``(K + 128 - r) / K`` of B.
"""

from __future__ import annotations

from ...nki.types import Access, Affine, DimSlice
from ...nki.types import ds as _ds
from .homes import HbmHome
from .matmul_chunks import ChunkTiles, div_affine

DGE_ROWS = 16  # src.shape[0] of a hardware-DGE transpose (and dst's innermost dim)
A_GROUP_CHUNKS = 8  # K chunks of Aᵀ per DMA transpose (and tile)


def dma_transposable(em, which: str, rows: int, nat: HbmHome | None) -> bool:
    """True when operand ``which`` ("a" or "b") of the MatmulEmitter ``em``, transposed on chip
    otherwise, is loaded by DMA transposes: the conditions of the module docstring. ``rows`` is
    the operand's non-K extent (M or N), ``nat`` its natural (rows, K) home."""
    if not em.transpose[which] or nat is None or _merged(nat) is None:
        return False
    if em.batch and all(n == 1 for n in em.batch):
        # only extent-1 batch dims, e.g. Qwen3's (1, seq, 2048) O projection: kept on TensorE
        # transposes, which the staged MLP prologue runs a tile ahead (tests/lower/
        # test_mlp_prologue.py, test_stage_pipeline.py); DMA transposes there not measured yet
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


def tail_window(em, rows: int, nat: HbmHome | None, eligible: bool) -> int:
    """The partial last K chunk's width ``r`` when operand B of the MatmulEmitter ``em`` is
    DMA-transposed through a tail window (module docstring), else 0. ``eligible``: the caller's
    structural conditions (standalone, one M tile, A from HBM, no pipeline)."""
    r = em.k % em.p
    if not eligible or not em.transpose["b"] or nat is None or em.batch or em.k < em.p:
        return 0
    if r not in (32, 64) or em.b_dt.itemsize != 2 or nat.base.type.dtype != em.b_dt:
        return 0
    return r if nat.strides[-1] == 1 and rows % DGE_ROWS == 0 else 0


def tail_source(nat: HbmHome, p: int) -> HbmHome:
    """The ``transposed_source`` view of the last ``p`` columns of the natural (rows, K) home
    ``nat``: ``[16, 1, rows / 16, p]``, element ``[i, 0, r, k]`` = ``X[16 r + i, K - p + k]``."""
    rows, k = nat.shape
    rs = nat.strides[0]
    return HbmHome(
        nat.base, nat.offset + (k - p), (DGE_ROWS, 1, rows // DGE_ROWS, p), (rs, p, DGE_ROWS * rs, 1)
    )


def _merged(nat: HbmHome) -> HbmHome | None:
    """``nat`` (batch..., rows, K) as one (batch x rows, K) home when its batch dims continue
    its rows in memory (each batch dim's stride is the next dim's extent times its stride;
    extent-1 dims aside), else None."""
    shape, strides = list(nat.shape[-2:]), list(nat.strides[-2:])
    for n, st in zip(reversed(nat.shape[:-2]), reversed(nat.strides[:-2])):
        if n == 1:
            continue
        if st != shape[0] * strides[0]:
            return None
        shape[0] *= n
    return HbmHome(nat.base, nat.offset, tuple(shape), tuple(strides))


def batch_row(em, which: str, idx, r0):
    """Row ``r0`` of batch instance ``idx`` of operand ``which`` in its merged (batch x rows,
    K) source (``_merged``): ``r0`` plus each batch index times its stride in rows."""
    nat = em.nat_homes[which]
    rs = nat.strides[-2]
    out = Affine.of(r0)
    for i, n, st in zip(idx, nat.shape[:-2], nat.strides[:-2]):
        if n > 1:
            out = out + Affine.of(i) * (st // rs)
    return out


def transposed_source(nat: HbmHome, p: int) -> HbmHome:
    """The view ``[16, K / p, rows / 16, p]`` of the natural (rows, K) home ``nat`` (batch dims
    folded into the rows: ``_merged``): element ``[i, c, r, k]`` is ``X[16 r + i, p c + k]``."""
    nat = _merged(nat)
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


def stage_a_dma(em, idx, m0, mt: int) -> ChunkTiles:
    """Aᵀ of the M tile at ``m0`` (``mt`` rows) of the MatmulEmitter ``em`` by DMA transposes:
    ChunkTiles of ``A_GROUP_CHUNKS`` K chunks each, one DMA per tile, so the first matmuls wait
    only for their own group."""
    nk = em.k // em.p
    at = ChunkTiles.alloc(em.b, em.p, nk, mt, em.a_dt, "a_t", A_GROUP_CHUNKS, split=DGE_ROWS)
    for tile, c0, c1 in at.parts:
        load_transposed(em.b, em.views["a_dmat"], tile, c0, c1 - c0, batch_row(em, "a", idx, m0), mt, em.p)
    return at
