"""Kernel Builder rule of ``nki.dma_transpose`` (nki/ops/dma_transpose.py): ``isa.dma_transpose(
dst, src, permutation)`` -- the name and keywords facts §4 lists among the Kernel Builder calls
AWS's NKIPy code uses; the permutation is the documented one of the access rank."""

from __future__ import annotations

from ..nki import ops as K
from . import kb_table as T
from .kb_rules import rule


@rule(K.DmaTransposeOp)
def _dma_transpose(w, op) -> None:
    w.isa_call(
        T.DMA_TRANSPOSE, dst=w.access(op, "dst"), src=w.access(op, "src"), permutation=list(op.axes or ())
    )
