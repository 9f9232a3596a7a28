"""Lowering of the collective tensor ops (nkigen_lite/parallel) to the collective NKI ops.

The NKI collectives work on whole HBM tensors along dim 0 (nki/ops/collective.py). A tensor
collective along another axis is staged: the blocks that cross ranks are copied (HBM -> HBM DMA)
into a tensor where they are consecutive along dim 0, and the result is copied back out of such a
tensor where it is concatenated along another axis. Along axis 0 the collective reads the
operand's home and writes the result's home directly when they are whole HBM allocations
(private HBM: sources at LNC 1 must be, and destinations are unless an opt-in says otherwise
[C6 all_reduce]); kernel inputs and outputs (shared HBM) are copied from / to.
"""

from __future__ import annotations

from ...ir.graph import ReturnOp
from ...nki.ops import AllocOp
from ...nki.types import Access
from ...parallel.collective_ops import AllGatherOp, AllReduceOp, AllToAllOp, CollectiveOp, ReduceScatterOp
from .context import LowerContext
from .homes import HbmHome
from .rules import item_rule
from .views import copy_home

_REDUCE = {"sum": "add", "max": "maximum", "min": "minimum"}


def _stacked(shape, world: int) -> tuple[int, ...]:
    return (shape[0] * world, *shape[1:])


def _blocks_to_dim0(ctx: LowerContext, h: HbmHome, x, axis: int, world: int) -> HbmHome:
    """A whole tensor holding ``h``'s ``world`` blocks along ``axis`` one after the other
    along dim 0 (``h`` itself when that is already so)."""
    if axis == 0 and _private(h, x):
        return h
    n = h.shape[axis] // world
    block = list(h.shape)
    block[axis] = n
    out = ctx.alloc_hbm(_stacked(block, world), h.base.type.dtype)
    for r in range(world):
        copy_home(ctx, h.sub(axis, r * n, n), out.sub(0, r * block[0], block[0]))
    return out


def _dim0_to_blocks(ctx: LowerContext, src: HbmHome, dst: HbmHome, axis: int, world: int) -> None:
    """Copy ``src``'s ``world`` dim-0 blocks into ``dst``'s blocks along ``axis``."""
    b0, n = src.shape[0] // world, dst.shape[axis] // world
    for r in range(world):
        copy_home(ctx, src.sub(0, r * b0, b0), dst.sub(axis, r * n, n))


def _private(h: HbmHome, x) -> bool:
    """True when ``h``, the home of ``x``, is the whole of an HBM scratch allocation (``nl.hbm``,
    private to the rank): collective sources must be private HBM at LNC 1 [C6 all_reduce];
    kernel inputs are not, nor the allocation of a graph output ``x`` (shared HBM)."""
    is_output = any(isinstance(u.op, ReturnOp) for u in x.uses)
    return h.is_whole_base and isinstance(h.base.defining_op, AllocOp) and not is_output


def _whole(ctx: LowerContext, h: HbmHome, x) -> HbmHome:
    if _private(h, x):
        return h
    out = ctx.alloc_hbm(h.shape, h.base.type.dtype)
    copy_home(ctx, h, out)
    return out


def _emit(ctx: LowerContext, kind: str, dst: HbmHome, src: HbmHome, world: int, op: str | None) -> None:
    kw = {"op": _REDUCE[op]} if op is not None else {}
    getattr(ctx.b, kind)(Access.whole(dst.base), Access.whole(src.base), world, **kw)


@item_rule(CollectiveOp)
def lower_collective(ctx: LowerContext, op: CollectiveOp) -> None:
    """Emit the NKI collective (and its staging copies) for one tensor collective."""
    ctx.at_op(op)
    x, y = op.operand(0), op.result
    world, h = op.attrs["world"], ctx.home(x)
    res = ctx.home_for_store(y)
    direct = res if res.is_whole_base else ctx.alloc_hbm(y.type.shape, y.type.dtype)
    if isinstance(op, AllReduceOp):
        _emit(ctx, "all_reduce", direct, _whole(ctx, h, x), world, op.attrs["op"])
    elif isinstance(op, ReduceScatterOp):  # rank r's block of the staged source has y's shape
        src = _blocks_to_dim0(ctx, h, x, op.attrs["axis"], world)
        _emit(ctx, "reduce_scatter", direct, src, world, op.attrs["op"])
    elif isinstance(op, AllGatherOp):
        axis = op.attrs["axis"]
        src = _whole(ctx, h, x)
        if axis == 0:
            _emit(ctx, "all_gather", direct, src, world, None)
        else:
            tmp = ctx.alloc_hbm(_stacked(x.type.shape, world), y.type.dtype)
            _emit(ctx, "all_gather", tmp, src, world, None)
            _dim0_to_blocks(ctx, tmp, direct, axis, world)
    elif isinstance(op, AllToAllOp):
        sa, ca = op.attrs["split_axis"], op.attrs["concat_axis"]
        src = _blocks_to_dim0(ctx, h, x, sa, world)
        if ca == 0:
            _emit(ctx, "all_to_all", direct, src, world, None)
        else:
            tmp = ctx.alloc_hbm(src.shape, y.type.dtype)
            _emit(ctx, "all_to_all", tmp, src, world, None)
            _dim0_to_blocks(ctx, tmp, direct, ca, world)
    else:
        raise AssertionError(op.name)
    if direct is not res:
        copy_home(ctx, direct, res)
