"""Hardware legality of ``nki.dma_transpose`` (ops/dma_transpose.py), lowered by NKI to a
hardware-DGE DMA transpose (``dge_mode=hwdge``). Every documented rule, where two sources
disagree the stricter one:

- ``dst`` is an SBUF tile; ``src`` is HBM or SBUF (never PSUM) [ISA] (nki_isa_constraints §2.4);
- one dtype on both sides, 2 bytes wide ("dtype is 2 bytes": the API page; the arch guide's
  4-byte transposes are not exposed by the API);
- the permutation is the documented one of the rank: 2-D (1, 0), 3-D (2, 1, 0), 4-D (3, 1, 2, 0);
  ``dst``'s access shape is ``src``'s permuted, rank included (required since NKI 0.4);
- hardware DGE: ``src.shape[0] == 16`` (the API page; the 0.6 release notes also allow 1, 2, 4, 8
  for 3-D / 4-D sources -- not taken), ``src.shape[-1] % 128 == 0`` (API page) and
  ``src.shape[-1] <= 128`` (0.6 release notes), so ``src.shape[-1] == 128``; for 3-D / 4-D
  ``(src.shape[0] * src.shape[-2]) % 16 == 0`` (0.6 release notes; implied by ``shape[0] == 16``).
- stricter than the docs (which state no layout rule): ``src``'s innermost dim is contiguous in
  memory (element stride 1), the layout the measured transpose rate was taken on.

Sources: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.dma_transpose.html
("DMA Direct Transpose Constraints"), the NKI 0.6 release notes
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/release-notes/components/nki.html).
"""

from __future__ import annotations

from . import ops
from .ops.dma_transpose import DMA_TRANSPOSE_AXES
from .types import MemorySpace
from .verify_ops import rule

SBUF, PSUM, HBM = MemorySpace.SBUF, MemorySpace.PSUM, MemorySpace.HBM
DGE_ROWS = 16  # src.shape[0] of a hardware-DGE transpose
DGE_COLUMNS = 128  # src.shape[-1]: a multiple of 128 and at most 128


def _inner_stride(a) -> int:
    """Element stride in memory of the innermost dim of access ``a``."""
    view = a.tensor.defining_op
    s = view.attrs["strides"][-1] if isinstance(view, ops.HbmViewOp) else 1
    return a.dims[-1].stride * s


@rule(ops.DmaTransposeOp)
def _dma_transpose(ctx, op) -> None:
    dst, src = op.access("dst"), op.access("src")
    name = "dma_transpose"
    if dst.space is not SBUF:
        raise ctx.fail(op, f"{name} dst is in {dst.space.value.upper()}; the transposed data lands in SBUF")
    if src.space is PSUM:
        raise ctx.fail(
            op, f"{name} src is in PSUM; the source is an HBM or SBUF tensor (DMA cannot touch PSUM)"
        )
    if dst.dtype is not src.dtype:
        raise ctx.fail(op, f"{name} moves raw elements: src is {src.dtype} but dst is {dst.dtype}")
    if src.dtype.itemsize != 2:
        raise ctx.fail(
            op,
            f"{name} src dtype {src.dtype} is {src.dtype.itemsize} bytes; "
            "a DMA transpose needs a 2-byte dtype",
        )
    axes = DMA_TRANSPOSE_AXES.get(len(src.shape))
    if axes is None:
        raise ctx.fail(
            op,
            f"{name} src has rank {len(src.shape)}; "
            "only 2-D, 3-D and 4-D sources have a documented permutation",
        )
    want = tuple(src.shape[a] for a in axes)
    if tuple(dst.shape) != want:
        raise ctx.fail(
            op,
            f"{name} dst access shape {list(dst.shape)} must be src shape {list(src.shape)} permuted by "
            f"{axes}: {list(want)} (rank included)",
        )
    if src.shape[0] != DGE_ROWS:
        raise ctx.fail(
            op, f"{name} src.shape[0] is {src.shape[0]}; a hardware-DGE transpose needs src.shape[0] == 16"
        )
    if src.shape[-1] != DGE_COLUMNS:
        raise ctx.fail(
            op,
            f"{name} src.shape[-1] is {src.shape[-1]}; a hardware-DGE transpose needs a multiple of 128 "
            "that is at most 128 (src.shape[-1] == 128)",
        )
    if len(src.shape) > 2 and (src.shape[0] * src.shape[-2]) % DGE_ROWS:
        raise ctx.fail(op, f"{name} src.shape[0] * src.shape[-2] must be a multiple of 16")
    if _inner_stride(src) != 1:
        raise ctx.fail(
            op,
            f"{name} src innermost dim has element stride {_inner_stride(src)}; "
            "it must be contiguous (stride 1)",
        )
    ctx.check_injective(op, "dst")
