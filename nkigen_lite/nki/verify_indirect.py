"""Hardware legality of the indirect DMAs (ops/indirect.py), NKI ``dma_copy`` with
``.ap(vector_offset=index, indirect_dim=0)`` on the HBM side:

- the HBM side is HBM and is a kernel tensor or a reshape of one (the hardware scales the index
  by the row size of the tensor ``.ap`` is called on); its access covers all of dim 0 (the
  indirect dim: only ``indirect_dim=0`` exists) with unit stride;
- the other side is an SBUF tile (no PSUM: DMAs never touch it) with one row per partition;
- ``index`` is an SBUF ``(P, 1)`` int32 / uint32 column on the same partitions (one free dim:
  ``vector_offset`` takes a 2-D tensor);
- each HBM row window has as many elements as a partition of the tile, in the same dtype (the
  software DGE moves raw rows; no casting indirect DMA is documented).
"""

from __future__ import annotations

from ..ir.types import row_major_strides
from . import ops
from .types import MemorySpace
from .verify_ops import rule

SBUF, HBM = MemorySpace.SBUF, MemorySpace.HBM


def _is_reshape(view: ops.HbmViewOp) -> bool:
    out = view.results[0].type
    return (
        view.attrs["offset"] == 0
        and out.size == view.operand(0).type.size
        and all(
            s == c
            for n, s, c in zip(out.shape, view.attrs["strides"], row_major_strides(out.shape))
            if n != 1
        )
    )


@rule(ops.DmaGatherOp, ops.DmaScatterOp)
def _indirect(ctx, op) -> None:
    hbm_name = op.indirect
    tile_name = "dst" if hbm_name == "src" else "src"
    h, t, idx = op.access(hbm_name), op.access(tile_name), op.access("index")
    if h.space is not HBM:
        raise ctx.fail(
            op, f"{hbm_name} is in {h.space.value.upper()}; the indirect side of {op.name} is an HBM tensor"
        )
    view = h.tensor.defining_op
    if isinstance(view, ops.HbmViewOp) and not _is_reshape(view):
        raise ctx.fail(
            op,
            f"{hbm_name} goes through a strided view; the index scales by the row size of a whole "
            "tensor, so the indirect side must be a kernel tensor or a reshape of one",
        )
    d0 = h.dims[0] if h.dims else None
    n0 = h.tensor.type.shape[0] if h.tensor.type.shape else 1
    if d0 is None or not (d0.offset.is_const and d0.offset.const == 0 and d0.size == n0 and d0.stride == 1):
        raise ctx.fail(op, f"{hbm_name} must cover all {n0:,} rows of dim 0 (the indirect dim)")
    if t.space is not SBUF:
        raise ctx.fail(
            op, f"{tile_name} is in {t.space.value.upper()}; {op.name} moves rows to/from an SBUF tile"
        )
    if idx.space is not SBUF or idx.free_size != 1 or idx.partitions != t.partitions or len(idx.dims) != 2:
        raise ctx.fail(
            op,
            f"index must be an SBUF ({t.partitions}, 1) column, got {idx.partitions} partitions x "
            f"{idx.free_size} elements in {len(idx.dims) - 1} free dims in {idx.space.value.upper()}",
        )
    if idx.dims[0].offset != t.dims[0].offset:
        raise ctx.fail(op, f"index must start at the same partition as {tile_name}")
    if idx.dtype.numpy_name not in ("int32", "uint32"):
        raise ctx.fail(op, f"index must be int32 or uint32, got {idx.dtype}")
    row = h.size // max(h.partitions, 1)
    if row != t.free_size:
        raise ctx.fail(
            op, f"{hbm_name} rows hold {row:,} elements but {tile_name} has {t.free_size:,} per partition"
        )
    if h.dtype is not t.dtype:
        raise ctx.fail(op, f"{op.name} moves raw rows: {hbm_name} is {h.dtype} but {tile_name} is {t.dtype}")
    ctx.check_injective(op, "dst")
