"""Data movement as HBM views: reshape (when no copy is needed), transpose, broadcast_to and
positive-step slices are new views of their operand's home; a reshape that needs a copy is one
HBM -> HBM DMA; a reversal (negative step) of the whole last axis is reversed on chip
(reverse_last.py), one other axis of a whole tensor gathered in reverse (reverse_rows.py), other
reversals are a loop of DMAs running backwards; concat operands
are stored straight into their slice of the result (planned before they are produced) or copied
there; ``tensor.layout_convert`` of a value in HBM is the same home."""

from __future__ import annotations

from ...ir.graph import Graph
from ...ir.op import Op
from ...ir.value import Value
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T
from ..layout.ops import LayoutConvertOp
from .broadcast_copy import copy_broadcast
from .concat_last import concat_last_on_chip
from .context import LowerContext
from .destrided_load import copy_destrided
from .hbm_copy_order import order_for_dma
from .homes import HbmHome
from .permute_copy import copy_permuted
from .reverse_last import reverse_last
from .reverse_rows import reverse_rows
from .rules import item_rule

VIEW_OPS = (T.ReshapeOp, T.TransposeOp, T.BroadcastToOp, T.SliceOp)


def is_layout_convert(op: Op) -> bool:
    return isinstance(op, LayoutConvertOp)


def copy_home(ctx: LowerContext, src: HbmHome, dst: HbmHome) -> None:
    """HBM -> HBM DMA of a whole value (row-major element pairing); a permuting copy goes
    through TensorE transposes instead (permute_copy.py), a small-step last-axis slice through
    contiguous loads and strided engine copies (destrided_load.py), a broadcast (a stride-0 dim)
    through one load per distinct block and one store per repeat (broadcast_copy.py); a plain
    DMA's dim order is chosen by the DMA model (hbm_copy_order.py)."""
    if copy_permuted(ctx, src, dst) or copy_destrided(ctx, src, dst) or copy_broadcast(ctx, src, dst):
        return
    src, dst = order_for_dma(src, dst, ctx.target)
    ctx.b.dma_copy(dst=Access.whole(ctx.view(dst)), src=Access.whole(ctx.view(src)))


def plan_concats(ctx: LowerContext, graph: Graph, producers: set[Value], outputs: set[Value]) -> None:
    """Give concat results a home first, so single-use parts are stored into their slice."""
    concats = [op for op in graph.body if isinstance(op, T.ConcatOp)]
    for op in reversed(concats):
        ctx.at_op(op)
        h = ctx.home_for_store(op.result)
        ax = op.attrs["axis"]
        start = 0
        for u in op.operands:
            n = u.type.shape[ax]
            if (
                u in producers
                and u not in ctx.homes
                and u.num_uses == 1
                and u not in outputs
                and u.type.dtype is op.result.type.dtype
            ):
                ctx.homes[u] = h.sub(ax, start, n)
            start += n


@item_rule(T.ConcatOp)
def lower_concat(ctx: LowerContext, op: T.ConcatOp) -> None:
    """Copy the operands not already stored in place into their slice of the result."""
    h = ctx.home_for_store(op.result)
    ax, start = op.attrs["axis"], 0
    if ax == len(h.shape) - 1 and _none_in_place(ctx, op, h):
        if concat_last_on_chip(ctx, [ctx.home(u) for u in op.operands], h):
            return
    for u in op.operands:
        n = u.type.shape[ax]
        part = h.sub(ax, start, n)
        if u not in ctx.homes or not ctx.homes[u].same_elements(part):
            copy_home(ctx, ctx.home(u), part)
        start += n


def _none_in_place(ctx: LowerContext, op: T.ConcatOp, h: HbmHome) -> bool:
    """No operand of the concat was stored straight into its slice of the result ``h``."""
    ax, start = op.attrs["axis"], 0
    for u in op.operands:
        n = u.type.shape[ax]
        if u in ctx.homes and ctx.homes[u].same_elements(h.sub(ax, start, n)):
            return False
        start += n
    return True


@item_rule(*VIEW_OPS, LayoutConvertOp)
def lower_view(ctx: LowerContext, op: Op) -> None:
    src = ctx.home(op.operand(0))
    v = op.result
    if is_layout_convert(op):
        ctx.homes[v] = src
        return
    if isinstance(op, T.TransposeOp):
        h = src.transpose(op.attrs["perm"])
    elif isinstance(op, T.BroadcastToOp):
        h = src.broadcast_to(tuple(op.attrs["shape"]))
    elif isinstance(op, T.SliceOp):
        h = src.slice(op.attrs["starts"], op.attrs["strides"], v.type.shape)
        if h is None:
            h = _reversing_copy(ctx, op, src)
    else:
        h = src.reshape(tuple(op.attrs["shape"]))
        if h is None:  # not expressible as a view: copy into row-major order
            h = ctx.alloc_hbm(v.type.shape, v.type.dtype)
            copy_home(ctx, src, h)
    ctx.homes[v] = h


def _reversing_copy(ctx: LowerContext, op: T.SliceOp, src: HbmHome) -> HbmHome:
    """A slice with negative steps: HBM views only have positive strides, so copy it into a
    fresh buffer with one DMA per index of the reversed dims, whose source offset runs
    backwards (``start + j * step`` with step < 0)."""
    v = op.result
    starts, steps = op.attrs["starts"], op.attrs["strides"]
    rev = [d for d, st in enumerate(steps) if st < 0 and v.type.shape[d] > 0]
    pos_starts = [0 if d in rev else a for d, a in enumerate(starts)]
    pos_steps = [1 if d in rev else st for d, st in enumerate(steps)]
    pos_shape = [src.shape[d] if d in rev else n for d, n in enumerate(v.type.shape)]
    pos_src = src.slice(pos_starts, pos_steps, pos_shape)
    out = ctx.alloc_hbm(v.type.shape, v.type.dtype)
    last = len(v.type.shape) - 1
    if rev == [last] and starts[last] == src.shape[last] - 1 and steps[last] == -1:
        if reverse_last(ctx, pos_src, out):  # the whole last axis reversed: on chip
            return out
    whole = all(starts[d] == src.shape[d] - 1 and steps[d] == -1 for d in rev)
    if len(rev) == len(v.type.shape) > 1 and whole:  # every axis: rows gathered in reverse
        if reverse_last(ctx, pos_src, out, every_axis=True):
            return out
    if len(rev) == 1 and rev[0] != last and starts[rev[0]] == src.shape[rev[0]] - 1 and steps[rev[0]] == -1:
        if reverse_rows(ctx, pos_src, out, rev[0]):  # rows gathered in reverse order
            return out
    view_src = ctx.view(pos_src)
    view_dst = ctx.view(out)

    def nest(k: int, idx: dict) -> None:
        if k == len(rev):
            sd, dd = [], []
            for d, n in enumerate(v.type.shape):
                if d in idx:
                    sd.append(DimSlice(Affine.of(starts[d]) + idx[d] * steps[d], 1, 1))
                    dd.append(DimSlice(Affine.of(idx[d]), 1, 1))
                else:
                    sd.append(DimSlice(Affine.of(0), n, 1))
                    dd.append(DimSlice(Affine.of(0), n, 1))
            ctx.b.dma_copy(dst=Access(view_dst, tuple(dd)), src=Access(view_src, tuple(sd)))
            return
        d = rev[k]
        with ctx.b.fori_loop(0, v.type.shape[d]) as j:
            nest(k + 1, {**idx, d: j})

    nest(0, {})
    return out
