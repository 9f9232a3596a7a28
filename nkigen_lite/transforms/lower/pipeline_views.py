"""Views of row-pipeline values that stay on chip: a head split and free-dim slices.

A decoder layer's front computes ``q = x @ Wq`` (rows × H·D), reshapes it to (rows, H, D) for
the per-head norm, and slices the normalised heads into halves for RoPE. Lowered as HBM views,
each of those reshapes and slices cut the row pipeline (pipeline.py): q went through HBM three
times. Within a pipeline both are views of an SBUF tile of the current row chunk instead:

- a **head split** ``reshape`` that keeps the row dims and splits the last dim (rows, N) into
  (rows, N/d, d) is the same row tile allocated with free shape (N/d, d): the matmul that
  computes it writes its PSUM banks as (rows, banks·512/d, d) (one contiguous run, as
  ``nc_matmul`` requires) and copies them into that tile;
- a **free slice** (unit strides, row dims whole, same rank) is the producer's tile read at the
  slice's start along the free dims (``TileFrame.tile_offsets``).

``view_alias`` decides whether a view item of a pipeline value is one of these; the pipeline
records the alias, the tile shape it requires of its root and the offsets, and lowers the view
op as an HBM view after the pipeline when its root was stored (``RowPipeline.views``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.value import Value
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T


@dataclass(frozen=True)
class ViewAlias:
    """``value`` is ``root``'s tile seen with free shape ``split`` (head split; None: the root's
    own) at free-dim ``offsets`` (aligned to the value's trailing dims; zeros for a split)."""

    value: Value
    root: Value
    split: tuple[int, ...] | None
    offsets: tuple[int, ...]


def view_alias(op, root_of, rows_rank: int) -> ViewAlias | None:
    """The alias ``op`` (a reshape or slice of a pipeline value whose root is ``root_of(src)``)
    stands for, or None when it must go through HBM. ``rows_rank``: the number of leading
    (batch and row) dims the pipeline iterates."""
    src = op.operand(0)
    root = root_of(src)
    v = op.result
    if isinstance(op, T.ReshapeOp):
        s, t = src.type.shape, v.type.shape
        if root is not src or src.type.rank != rows_rank + 1 or t[:rows_rank] != s[:rows_rank]:
            return None
        if len(t) != rows_rank + 2 or t[-2] * t[-1] != s[-1] or t[-1] < 2:
            return None
        return ViewAlias(v, root, tuple(t[rows_rank:]), (0, 0))
    if isinstance(op, T.SliceOp):
        a = op.attrs
        starts, stops, strides = list(a["starts"]), list(a["stops"]), list(a["strides"])
        shape = src.type.shape
        if any(s != 1 for s in strides) or src.type.rank <= rows_rank:
            return None
        if any(starts[d] != 0 or stops[d] != shape[d] for d in range(rows_rank)):
            return None
        return ViewAlias(v, root, None, tuple(starts[rows_rank:]))
    return None


def split_access_dims(col0, ncols: int, inner: int):
    """(start of the outer free dim, its size) of the columns [col0, col0 + ncols) of a row tile
    held as (rows, N/inner, inner): ``col0`` an int or Affine, both multiples of ``inner``."""
    a = Affine.of(col0)
    if a.const % inner or any(c % inner for _, c in a.terms) or ncols % inner:
        raise AssertionError(f"lowering bug: columns {col0}+{ncols} do not align with heads of {inner}")
    return Affine(a.const // inner, tuple((x, c // inner) for x, c in a.terms)), ncols // inner


def concat_in_place(ctx, op: T.ConcatOp) -> bool:
    """True when every part of the concat already has its slice of the result as its home
    (views.plan_concats): lowering it copies nothing, so it need not end a row pipeline."""
    if op.result not in ctx.homes:
        return False
    h = ctx.homes[op.result]
    ax, start = op.attrs["axis"], 0
    for u in op.operands:
        n = u.type.shape[ax]
        if ctx.homes.get(u) != h.sub(ax, start, n):
            return False
        start += n
    return True


def concat_parts(op: T.ConcatOp, group, plan, rows_rank: int) -> dict | None:
    """{part: its offsets along the concat's free dims} when every part of ``op`` is computed by
    the fusion group ``group`` (planned as ``plan``) over its whole domain, used only by the
    concat, in the concat's dtype, and the concat axis is a free dim: the group then writes the
    parts into one row tile of the concat, stored once (``ConcatStore``). None otherwise."""
    ax = op.attrs["axis"]
    v = op.result
    if ax < rows_rank or v.type.rank != len(plan.domain):
        return None
    members = set(group.ops)
    out, start = {}, 0
    for u in op.operands:
        if (
            u.defining_op not in members
            or u.num_uses != 1
            or u in out
            or u.type.dtype is not v.type.dtype
            or u.type.shape != plan.domain
        ):
            return None
        offs = [0] * (v.type.rank - rows_rank)
        offs[ax - rows_rank] = start
        out[u] = tuple(offs)
        start += u.type.shape[ax]
    return out


class ConcatStore:
    """A row-pipeline participant storing the row tile a group assembled for a concat (its parts
    written at their offsets) with one DMA per row instance, after the group's ops."""

    def __init__(self, ctx, concat: Value, loops, tiles: dict):
        self.ctx, self.concat, self.loops, self.tiles = ctx, concat, loops, tiles
        self.view = None

    def prepare(self) -> None:
        self.view = self.ctx.view(self.ctx.home_for_store(self.concat))

    def top_instance(self) -> dict:
        return {}

    def enter(self, inst: dict, level: int, offset, extent: int) -> dict:
        return {**inst, self.loops[level].dim: (offset, extent)}

    def before(self, level: int, inst: dict) -> None:
        if level != len(self.loops):
            return
        self.ctx.at(f"store {self.ctx.name(self.concat)}")
        shape = self.view.type.shape
        dims, rows = [], 1
        for d, n in enumerate(shape):
            off, ext = inst.get(d, (0, n))
            dims.append(DimSlice(Affine.of(off), ext, 1))
        tile = self.tiles[self.concat]
        for d, n in enumerate(shape[: len(shape) - (tile.type.rank - 1)]):
            rows *= inst.get(d, (0, n))[1]
        src = Access(
            tile,
            (DimSlice(Affine.of(0), rows, 1),)
            + tuple(DimSlice(Affine.of(0), n, 1) for n in tile.type.shape[1:]),
        )
        self.ctx.b.dma_copy(dst=Access(self.view, tuple(dims)), src=src)

    def after(self, _level: int, _inst: dict) -> None:
        return None
