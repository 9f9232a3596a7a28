"""The row pipeline feeding a blocked gated MLP, run as the MLP's staging loop.

In a decoder layer the MLP's input ``x = rmsnorm(o2)`` and its residual ``o2 = O @ Wo + h``
come out of a row pipeline (the O projection and the fusion group after it). Lowered on their
own, that pipeline stores ``x`` and ``o2`` to HBM, the MLP block (mlp_block.py) loads ``x``
back to stage ``xᵀ`` and its epilogue loads ``o2`` back for the residual add. Here the pipeline
is emitted as the MLP's staging loop instead: per row tile its members run as usual, and two
more participants take their tiles —

- ``_StageRows`` transposes the MLP input's row tile (TensorE, one PSUM bank of 128-column
  blocks per copy) into ``hᵀ`` (``[p, K / p, S]``, K on the partitions), the tile the blocked
  up projections read;
- ``_KeepRows`` copies each value the MLP's epilogue reads row-aligned (the residual ``o2``)
  into a buffer holding it for every row (``[p, row tiles · D]``), from which the epilogue
  copies it back per row tile.

Neither value goes through HBM (an output is stored once, never read back). Only values
whose every reader is the pipeline, the MLP block, its epilogue or the graph's outputs are
kept; each kept buffer must fit
beside ``hᵀ``, the accumulator and the blocks (``mlp_block.choose_block`` counts it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.graph import ReturnOp
from ...ir.value import Value
from ...nki.types import Access, Affine
from ...nki.types import ds as _ds
from .pipeline import RowPipeline, emit_pipeline


@dataclass
class Prologue:
    """The collected row pipeline, the MLP input it produces and the values kept on chip."""

    pipe: RowPipeline
    a: Value  # the MLP input (the pipeline's value the up projections read)
    kept: list = field(default_factory=list)  # values the epilogue reads, held for all rows
    buffers: dict = field(default_factory=dict)  # kept value -> its [p, row tiles * D] buffer


def match_prologue(pipe: RowPipeline, blk, partitions: int) -> Prologue | None:
    """The pipeline ``pipe`` (collected, not yet emitted) as ``blk``'s staging loop, or None
    when it does not compute the MLP input over the same rows."""
    if not pipe.members:
        return None
    a_v = blk.ups[0].operand(0)
    a = pipe.root(a_v)
    if a not in pipe.produced or a.type.shape != a_v.type.shape:
        return None
    s, k = a.type.shape[-2:]
    loops = pipe.members[0].loops
    if pipe.members[0].rows != a.type.shape[:-1] or k % partitions:
        return None
    want = [("P", partitions)] if s > partitions else []
    if [(lp.kind, lp.chunk) for lp in loops] != want:
        return None
    block_ops = {op for op in blk.act_group.ops} | {*blk.ups, blk.down}
    block_ops |= {v.defining_op for v in blk.d_values[1:]}
    if blk.epilogue is not None:
        block_ops |= set(blk.epilogue.ops)
    inside = pipe.all_ops() | block_ops
    d_shape = blk.down.result.type.shape
    kept = []
    if blk.epilogue is not None:
        members = set(blk.epilogue.ops)
        for op in blk.epilogue.ops:
            for u in op.operands:
                r = pipe.root(u)
                if u.defining_op in members or u is not r or r not in pipe.produced or r in kept:
                    continue
                readers_ok = all(x.op in inside or isinstance(x.op, ReturnOp) for x in r.uses)
                if r.type.shape != d_shape or not readers_ok:
                    continue
                kept.append(r)
    return Prologue(pipe, a, kept)


def kept_bytes(pro: Prologue | None, partitions: int, rows: int) -> int:
    """SBUF bytes per partition of the kept values' buffers for ``rows`` rows."""
    if pro is None:
        return 0
    out = 0
    for v in pro.kept:
        d = v.type.shape[-1]
        out += -(-rows // partitions) * d * v.type.dtype.itemsize
    return out


def _row_tile(m0, p: int) -> Affine:
    """The row tile index of row offset ``m0`` (a multiple of ``p``)."""
    rt = Affine.of(m0)
    return Affine(rt.const // p, tuple((v, c // p) for v, c in rt.terms))


class _RowsParticipant:
    """A participant of the pipeline's loop nest that acts on each row tile's tiles."""

    def __init__(self, loops, tiles: dict, p: int, rows: int):
        self.loops, self.tiles, self.p, self.rows = loops, tiles, p, rows

    def prepare(self) -> None:
        return None

    def top_instance(self):
        return (0, min(self.p, self.rows))

    def enter(self, inst, level: int, offset, extent: int):
        return (offset, extent) if self.loops[level].kind == "P" else inst

    def before(self, level: int, inst) -> None:
        if level == len(self.loops):
            self.row_tile(*inst)

    def after(self, _level: int, _inst) -> None:
        return None


class _StageRows(_RowsParticipant):
    """Transposes the MLP input's row tile into ``hᵀ``."""

    def __init__(self, ctx, loops, tiles: dict, a: Value, h_t, at_op, rows: int):
        super().__init__(loops, tiles, ctx.partitions, rows)
        self.ctx, self.a, self.h_t, self.at_op = ctx, a, h_t, at_op

    def row_tile(self, m0, mt: int) -> None:
        b, p, tg = self.ctx.b, self.p, self.ctx.target
        self.ctx.at_op(self.at_op)
        src = self.tiles[self.a]
        k = self.a.type.shape[-1]
        nk = k // p
        dt = self.h_t.type.dtype
        per_bank = max(1, tg.psum_bank_bytes // (p * dt.itemsize))
        for c0 in range(0, nk, per_bank):
            ng = min(per_bank, nk - c0)
            ps = b.alloc((p, per_bank, p), dt, "psum", name="ps_t")
            for c in range(ng):
                b.nc_transpose(
                    dst=Access(ps, (_ds(0, p), _ds(c, 1), _ds(0, mt))),
                    data=Access(src, (_ds(0, mt), _ds((c0 + c) * p, p))),
                )
            b.tensor_copy(
                dst=Access(self.h_t, (_ds(0, p), _ds(c0, ng), _ds(m0, mt))),
                src=Access(ps, (_ds(0, p), _ds(0, ng), _ds(0, mt))),
            )


class _KeepRows(_RowsParticipant):
    """Copies each kept value's row tile into its all-rows buffer."""

    def __init__(self, ctx, loops, tiles: dict, pro: Prologue, rows: int):
        super().__init__(loops, tiles, ctx.partitions, rows)
        self.ctx, self.pro = ctx, pro

    def row_tile(self, m0, mt: int) -> None:
        for v in self.pro.kept:
            d = v.type.shape[-1]
            self.ctx.at(f"keep {self.ctx.name(v)}")
            col = _row_tile(m0, self.p) * d
            self.ctx.b.tensor_copy(
                dst=Access(self.pro.buffers[v], (_ds(0, mt), _ds(col, d))),
                src=Access(self.tiles[v], (_ds(0, mt), _ds(0, d))),
            )


def emit_prologue(ctx, pro: Prologue, blk, outputs: set, row_local, h_t, group=None) -> None:
    """Allocate the kept buffers and emit the pipeline as the staging loop of ``h_t``.
    ``group`` = (loops, base, rows): only that group of rows, ``h_t`` and the buffers holding
    the group (mlp_block.py's row groups)."""
    p = ctx.partitions
    for v in pro.kept:
        s, d = v.type.shape[-2:]
        s = s if group is None else group[2]
        ctx.at(f"keep {ctx.name(v)}")
        pro.buffers[v] = ctx.b.alloc((p, -(-s // p) * d), v.type.dtype, "sbuf", name="kept")
    pipe = pro.pipe
    block_ops = {op for op in blk.act_group.ops} | {*blk.ups, blk.down}
    block_ops |= {v.defining_op for v in blk.d_values[1:]}
    if blk.epilogue is not None:
        block_ops |= set(blk.epilogue.ops)
    for it in blk.prelude:
        block_ops.add(it)
    pipe.inside = block_ops
    pipe.passed |= {pro.a, *pro.kept}
    loops = pipe.members[0].loops if group is None else group[0]
    nrows = pro.a.type.shape[-2] if group is None else group[2]

    def extra(tiles: dict) -> list:
        return [
            _StageRows(ctx, loops, tiles, pro.a, h_t, blk.ups[0], nrows),
            _KeepRows(ctx, loops, tiles, pro, nrows),
        ]

    rows = None if group is None else group[:2]
    emit_pipeline(ctx, pipe, outputs, row_local, extra=extra, rows=rows)
    for alias, root in pipe.alias.items():
        if root in ctx.homes and alias not in ctx.homes:
            ctx.homes[alias] = ctx.homes[root]
