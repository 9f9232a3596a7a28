"""Hardware legality of the collective NKI ops (nki/ops/collective.py).

As documented for ``nki.collectives`` on HBM (nki_isa_constraints.md §9; [C6] all_reduce, NKI
0.7 page: "When LNC degree is 1, the srcs must be on private_hbm; only the dsts may be shared,
and only when NKI_LNC1_SHARED_HBM=1 is set"): source and destination are whole HBM allocations
(``nl.hbm`` = private HBM), never kernel inputs or outputs (shared HBM) nor views — stricter
than the docs for views — the collective dimension is 0, the
dtypes match, ``world`` is at least 1, and the shapes fit the collective. A collective runs at
the kernel's top level (stricter: the rank-parallel interpreter meets the ranks there).
"""

from __future__ import annotations

from . import ops
from .types import MemorySpace
from .verify_ops import rule


@rule(*ops.COLLECTIVE_OPS)
def _collective(ctx, op) -> None:
    world = op.attrs["world"]
    if world < 1:
        raise ctx.fail(op, f"world {world} must be at least 1")
    if op.parent_op is not None:
        raise ctx.fail(op, "a collective runs at the kernel's top level, not inside a loop")
    dst, src = op.access("dst"), op.access("src")
    for name, a in (("dst", dst), ("src", src)):
        if a.space is not MemorySpace.HBM:
            raise ctx.fail(op, f"{name} is in {a.space.value}; collectives here move whole HBM tensors")
        if not isinstance(a.tensor.defining_op, ops.AllocOp) or not a.is_whole():
            raise ctx.fail(
                op,
                f"{name} must be a whole HBM allocation (private HBM), not a kernel input, view or "
                "window: at LNC 1 collective sources are private HBM [C6]",
            )
        if any(a.tensor is v for v in ctx.graph.outputs.values()):
            raise ctx.fail(
                op,
                f"{name} is kernel output {ctx.name(a.tensor)} (shared HBM); collectives "
                "write private HBM at LNC 1 [C6]: copy to the output after",
            )
    if dst.tensor is src.tensor:
        raise ctx.fail(op, "dst and src are the same tensor; a collective writes a separate destination")
    if dst.dtype is not src.dtype:
        raise ctx.fail(op, f"dst dtype {dst.dtype} differs from src dtype {src.dtype}")
    shape = src.shape
    if op.name != "nki.all_reduce":
        if not shape:
            raise ctx.fail(op, f"{op.name} needs a source of rank >= 1 (collective dim 0)")
        if op.name != "nki.all_gather" and shape[0] % world:
            raise ctx.fail(op, f"src dim 0 has size {shape[0]}, not divisible by world {world}")
    want = op.dst_shape(shape)
    if dst.shape != want:
        raise ctx.fail(
            op, f"dst has shape {dst.shape}; a {op.name} of src {shape} over {world} ranks gives {want}"
        )
