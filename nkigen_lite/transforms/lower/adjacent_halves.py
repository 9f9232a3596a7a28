"""Two windows of one HBM tensor side by side along its contiguous last axis, moved by one DMA.

A fusion group reading ``x[..., :64]`` and ``x[..., 64:]`` (the halves of a rotate-halves RoPE)
loads each half by its own DMA, and the two results stored into the halves of a concatenated
output are stored by two: each descriptor moves one half row (128 B of a bf16 head), where the
whole row is contiguous. When the two windows have the same shape and strides, the last one
unit-stride, and start ``n`` elements apart (``n`` their last extent, under the DMA's efficient
2 KiB run: longer halves gain nothing; rows that do not overlap), and the group's loops do not
tile that dim, one tile of last extent ``2n`` holds both: one DMA loads it (or stores it), each
value read or written at its offset in it (``TileFrame.tile_offsets``). Two windows that
interleave (last stride 2, one element apart: ``x[..., ::2]`` and ``x[..., 1::2]``, or the even
and odd elements of an interleaving stack, interleaved_concat.py) pair the same way, each read
or written with step 2 (``TileFrame.tile_steps``).

``pairs(em, views, values, level_of)`` finds the pairs; the group emitter (group_emit.py) loads
and stores them.
"""

from __future__ import annotations

from ...nki.types import Access, DimSlice
from .destrided_load import _view_layout
from .homes import HbmHome


def last_free_dim(em) -> int | None:
    """The domain dim that is innermost both in the group's HBM views and in its tiles, when
    no loop tiles it (None otherwise)."""
    plan = em.plan
    if not plan.f_dims or not plan.order or plan.order[-1] != plan.f_dims[-1]:
        return None
    d = plan.f_dims[-1]
    return None if d in em.loop_index else d


def pairs(em, views: dict, values: list, level_of: dict) -> dict:
    """{value: (lead, shift, combined view, step)} for both members of each pair of ``values``
    whose HBM ``views`` sit side by side on the last axis, or interleave on it (last stride 2,
    starts one element apart: ``step`` 2); ``lead`` is the member first in ``values`` (it
    allocates the tile), ``shift`` a member's offset in it."""
    d = last_free_dim(em)
    if d is None:
        return {}
    n = em.plan.domain[d]
    short = em.ctx.target.dma_min_efficient_bytes_per_partition
    found: dict = {}
    layouts = {}
    for v in values:
        lay = _view_layout(views[v]) if v in views else None
        if lay is not None and lay[2] and lay[2][-1] in (1, 2) and views[v].type.shape[-1] == n > 1:
            layouts[v] = lay
    for i, a in enumerate(values):
        if a not in layouts or a in found:
            continue
        for b in values[i + 1 :]:
            if b not in layouts or b in found or level_of[a] != level_of[b]:
                continue
            (ba, oa, sa), (bb, ob, sb) = layouts[a], layouts[b]
            if ba is not bb or sa != sb or views[a].type.shape != views[b].type.shape:
                continue
            step = sa[-1]  # 1: side by side; 2: interleaved (even and odd elements)
            if a.type.dtype is not b.type.dtype or abs(ob - oa) != (n if step == 1 else 1):
                continue
            if step == 1 and n * a.type.dtype.itemsize >= short:
                continue  # each half already moves efficient runs
            dims = zip(views[a].type.shape[:-1], sa[:-1])
            if any(m > 1 and st < 2 * n for m, st in dims):
                continue  # the combined rows would overlap (x[1:] + x[:-1]): not two halves
            lo = min(oa, ob)
            shape = views[a].type.shape[:-1] + (2 * n,)
            combined = em.ctx.view(HbmHome(ba, lo, shape, sa[:-1] + (1,)))
            found[a] = (a, oa - lo, combined, step)
            found[b] = (a, ob - lo, combined, step)
            break
    return found


def whole_last(acc: Access, n2: int) -> Access:
    """``acc`` with its last dim the whole ``n2`` elements from 0."""
    return Access(acc.tensor, acc.dims[:-1] + (DimSlice(0, n2, 1),))
