"""DMA transpose: a DMA that permutes the dims of what it moves (NKI ``nisa.dma_transpose``).

``nki.dma_transpose dst, src``: ``dst = np.transpose(src, DMA_TRANSPOSE_AXES[rank])`` with the
permutation fixed by the access rank as the NKI docs state it: 2-D ``(1, 0)``, 3-D
``(2, 1, 0)``, 4-D ``(3, 1, 2, 0)``; ``dst``'s access shape is the permuted access shape of
``src`` (rank included). The DMA engines do the permutation on the way (HBM -> SBUF or
SBUF -> SBUF), bit-exact, so a transposed load needs no TensorE transpose and no PSUM.
The legality rules (verify_dma_transpose.py) are the hardware-DGE ones of the docs.

A DMA (``DmaCopyOp`` subclass): statistics, HBM traffic and the scheduler count it like a
``dma_copy`` of its elements; its transfer rate is the DMA-transpose one (perf/dma_cost.py).
"""

from __future__ import annotations

from .memory import DmaCopyOp

# access rank -> the permutation nisa.dma_transpose applies (the only ones documented)
DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


class DmaTransposeOp(DmaCopyOp):
    """``nki.dma_transpose dst, src``: SBUF ``dst = transpose(src, DMA_TRANSPOSE_AXES[rank])``."""

    name = "nki.dma_transpose"

    @property
    def axes(self) -> tuple[int, ...] | None:
        """The permutation of this op's rank (None for an undocumented rank)."""
        return DMA_TRANSPOSE_AXES.get(len(self.access("src").shape))
