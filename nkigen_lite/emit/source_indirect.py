"""NKI-source rules of the indirect DMAs (nki/ops/indirect.py): ``nisa.dma_copy`` whose HBM side
is ``t.ap(pattern, offset, vector_offset=index, indirect_dim=0)``, ``t`` the kernel tensor (or
its reshape) whose rows the index selects. The pattern's leading pair is ``[row size, P]`` (the
hardware scales the index by the row size of ``t``; the pair is written out anyway), the
others walk the row window; ``offset`` is the window's start within a row."""

from __future__ import annotations

from ..ir.types import row_major_strides
from ..nki import ops as K
from ..nki.types import Affine
from .accesses import format_affine
from .source_rules import rule


def indirect_ap(e, op) -> str:
    """Source text of the indirect (HBM) side of ``op``."""
    h, idx = op.access(op.indirect), op.access("index")
    strides = row_major_strides(h.tensor.type.shape)
    pattern = [(strides[0] if strides else 1, idx.partitions)]
    offset = Affine(0)
    for d, s in zip(h.dims[1:], strides[1:]):
        pattern.append((s * d.stride, d.size))
        offset = offset + d.offset * s
    if len(pattern) == 1:
        pattern.append((1, 1))
    pairs = ", ".join(f"[{s}, {n}]" for s, n in pattern)
    return (
        f"{e.name(h.tensor)}.ap(pattern=[{pairs}], offset={format_affine(offset, e.name)}, "
        f"vector_offset={e.access(op, 'index')}, indirect_dim=0)"
    )


@rule(K.DmaGatherOp, "nisa.dma_copy")
def _gather(e, op) -> None:
    e.call("nisa.dma_copy", [("dst", e.access(op, "dst")), ("src", indirect_ap(e, op))])


@rule(K.DmaScatterOp, "nisa.dma_copy")
def _scatter(e, op) -> None:
    e.call("nisa.dma_copy", [("dst", indirect_ap(e, op)), ("src", e.access(op, "src"))])
