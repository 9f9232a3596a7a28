"""Where an access's elements sit in memory: element strides and contiguous runs.

A tile stores each partition's free elements row-major (the partition dim is a separate memory
lane, not a stride); an HBM tensor is row-major flat storage, or the strided view an
``nki.hbm_view`` describes. The cost model reads these to find unit-stride VectorE operands and
the contiguous chunk a DMA descriptor moves.
"""

from __future__ import annotations

from ..ir.types import row_major_strides
from ..nki.ops import HbmViewOp
from ..nki.types import Access, HbmType


def storage_strides(access: Access) -> tuple[int, ...]:
    """Element stride of each dim of the accessed tensor in its storage (a tile's dim 0, the
    partition dim, gets 0: partitions are separate lanes)."""
    v = access.tensor
    if isinstance(v.type, HbmType):
        op = v.defining_op
        if isinstance(op, HbmViewOp):
            return tuple(op.attrs["strides"])
        return row_major_strides(v.type.shape)
    return (0, *row_major_strides(v.type.shape[1:]))


def element_strides(access: Access) -> tuple[int, ...]:
    """Element stride of each dim of the access (slice stride x storage stride)."""
    return tuple(d.stride * s for d, s in zip(access.dims, storage_strides(access)))


def contiguous_run(access: Access) -> int:
    """Elements in the longest innermost run the access reads or writes contiguously: within one
    partition for a tile, across all dims for HBM (size-1 dims are skipped)."""
    dims = access.dims if isinstance(access.tensor.type, HbmType) else access.dims[1:]
    strides = element_strides(access)[len(access.dims) - len(dims) :]
    run = 1
    for d, s in zip(reversed(dims), reversed(strides)):
        if d.size == 1:
            continue
        if s != run:
            break
        run *= d.size
    return run


def unit_stride(access: Access) -> bool:
    """True when the innermost free dim with more than one element has element stride 1."""
    for d, s in zip(reversed(access.dims[1:]), reversed(element_strides(access)[1:])):
        if d.size > 1:
            return s == 1
    return True
