"""Indirect DMA: rows of an HBM tensor selected at run time by an index tile in SBUF.

``nki.dma_gather dst, src, index``: ``dst[p, ...] = src[index[p, 0], ...]`` — partition ``p``
of the SBUF tile ``dst`` receives the row of HBM tensor ``src`` that ``index[p, 0]`` names.
``nki.dma_scatter dst, src, index``: ``dst[index[p, 0], ...] = src[p, ...]``. The HBM side is
a whole kernel tensor (or a reshape of one): its access covers all of dim 0 (the indirect dim)
and may window the other dims. NKI: ``nisa.dma_copy`` with
``hbm.ap(pattern, offset, vector_offset=index, indirect_dim=0)`` on the HBM side (software
DGE; the run-time bounds check raises in the default ``oob_mode.error``).

Both are DMAs (``DmaCopyOp`` subclasses): statistics and the cost model count the elements
the SBUF side moves.
"""

from __future__ import annotations

from ...ir.attrs import Attr
from ..access import ACCESS
from .memory import DmaCopyOp


class DmaGatherOp(DmaCopyOp):
    """``nki.dma_gather dst, src, index``: SBUF ``dst[p] = HBM src[index[p, 0]]`` (rows)."""

    name = "nki.dma_gather"
    attr_spec = (Attr("dst", ACCESS), Attr("src", ACCESS), Attr("index", ACCESS))
    writes = ("dst",)
    indirect = "src"

    @property
    def moved(self):
        """The access whose elements the DMA moves (the SBUF side)."""
        return self.access("dst")


class DmaScatterOp(DmaCopyOp):
    """``nki.dma_scatter dst, src, index``: HBM ``dst[index[p, 0]] = SBUF src[p]`` (rows)."""

    name = "nki.dma_scatter"
    attr_spec = (Attr("dst", ACCESS), Attr("src", ACCESS), Attr("index", ACCESS))
    writes = ("dst",)
    indirect = "dst"

    @property
    def moved(self):
        return self.access("src")


INDIRECT_OPS = (DmaGatherOp, DmaScatterOp)
