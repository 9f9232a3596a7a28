"""Kernel Builder rules of the indirect DMAs (nki/ops/indirect.py): ``dma_copy`` whose HBM side
is ``t.ap(pattern, offset, vector_offset=index, indirect_dim=0)`` (as in source_indirect.py).
No public Kernel Builder reference documents an indirect access; this mirrors NKI's ``.ap``
keywords, checked only against the recording stand-in (tests/emit/kb_standin.py)."""

from __future__ import annotations

from ..ir.types import row_major_strides
from ..nki import ops as K
from ..nki.types import Affine
from . import kb_table as T
from .kb_rules import rule


def _indirect(w, op):
    h, idx = op.access(op.indirect), op.access("index")
    strides = row_major_strides(h.tensor.type.shape)
    pattern = [[strides[0] if strides else 1, idx.partitions]]
    offset = Affine(0)
    for d, s in zip(h.dims[1:], strides[1:]):
        pattern.append([s * d.stride, d.size])
        offset = offset + d.offset * s
    if len(pattern) == 1:
        pattern.append([1, 1])
    return w.env[h.tensor].ap(
        pattern=pattern, offset=w.affine(offset), vector_offset=w.access(op, "index"), indirect_dim=0
    )


@rule(K.DmaGatherOp)
def _gather(w, op) -> None:
    w.isa_call(T.DMA_COPY, dst=w.access(op, "dst"), src=_indirect(w, op))


@rule(K.DmaScatterOp)
def _scatter(w, op) -> None:
    w.isa_call(T.DMA_COPY, dst=_indirect(w, op), src=w.access(op, "src"))
