"""The MLP block's down-projection weight rows loaded in long contiguous runs.

Block ``j`` of the down projection reads rows ``[j·bw, (j+1)·bw)`` of ``Wd`` (I, D) and
contracts them over the partitions, ``nb = bw / p`` chunks of ``p`` rows. Chunk ``c`` holding
rows ``j·bw + c·p + r`` on partition ``r`` (the natural chunking) makes each partition read
``nb`` separate rows: a DMA descriptor moves one row, ``D`` elements (2 KiB for a bf16
Qwen3-0.6B layer, DMA efficiency 0.85). Here chunk ``c`` holds rows ``j·bw + r·nb + c`` on
partition ``r`` instead: partition ``r`` reads the ``nb`` consecutive rows ``j·bw + r·nb …``,
one contiguous run of ``nb·D`` elements (16 KiB, efficiency 1.0). The contraction is a sum over
all the block's rows, so any assignment of rows to (partition, chunk) gives the same sum as long
as ``actᵀ``'s chunk ``c`` holds the same intermediate columns: its transposes read the act row
tile's columns ``r·nb + c`` (``act_columns``, stride ``nb``) instead of ``c·p + r``. The PSUM
accumulation then adds the block's products in another order (fp32, as any matmul's).
"""

from __future__ import annotations

from ...nki.types import Access, DimSlice
from ...nki.types import ds as _ds
from .homes import HbmHome


def rows_home(hb: HbmHome, p: int, nb: int) -> HbmHome:
    """Wd (batch..., I, D) as (batch..., I // (p·nb), p, nb, D): row ``j·p·nb + r·nb + c`` at
    ``[j, r, c]``."""
    *lead, sk, sn = hb.strides
    shape = tuple(hb.shape[:-2]) + (hb.shape[-2] // (p * nb), p, nb, hb.shape[-1])
    return HbmHome(hb.base, hb.offset, shape, tuple(lead) + (p * nb * sk, nb * sk, sk, sn))


def load_rows(b, view, lead: tuple, j, wd, p: int, nb: int, d: int) -> None:
    """Fill ``wd`` [p, nb, d] with block ``j``'s rows of Wd in the row-run order (one DMA;
    ``view`` is ``rows_home``'s, ``lead`` its batch index slices)."""
    b.dma_copy(
        dst=Access(wd, (_ds(0, p), _ds(0, nb), _ds(0, d))),
        src=Access(view, lead + (_ds(j, 1), _ds(0, p), _ds(0, nb), _ds(0, d))),
    )


def act_columns(c: int, p: int, nb: int) -> DimSlice:
    """The act row tile's columns chunk ``c`` of ``actᵀ`` transposes: ``r·nb + c`` for partition
    ``r`` of the result."""
    return _ds(c, p, nb)
