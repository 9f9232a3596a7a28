"""The gated MLP as one loop nest blocked over its intermediate dim, weights loaded once.

``y = act(h @ Wg, h @ Wu) @ Wd`` (SwiGLU: ``act = silu(g) * u``; one or two up projections
reading the same ``h``, then an element-wise fusion group, then the down projection, and
optionally a fusion group reading ``y`` row-aligned, e.g. the residual add). In a row pipeline
the (S, I) intermediate lives one row tile at a time, but the three weights (3·D·I elements:
18 MiB for a Qwen3-0.6B layer in bf16) do not fit SBUF beside it, so either the weights are
streamed once per row tile or the intermediate goes through HBM. Here the loops are swapped:

- ``hᵀ`` for all rows is staged once into SBUF (natural loads + TensorE transposes), and the
  down projection's fp32 accumulator ``acc`` (S, D) is held in SBUF and zeroed;
- for every block of ``bw`` intermediate columns (a ``fori_loop``): the block's columns of Wg /
  Wu and rows of Wd are loaded once (rotating buffers prefetch the next block), then for every
  row tile: ``g``, ``u`` (one PSUM bank each) → the fusion group on the row tile's block →
  its transpose (TensorE) → the down projection's partial product for the block, added into
  ``acc``;
- an epilogue row loop rounds ``acc`` to the result dtype and runs the following fusion group
  on it (or stores it).

HBM traffic: ``h`` once, every weight once, the epilogue's operands and results once; the
intermediate never. The partial sums over blocks stay fp32 and are rounded once, as the
unblocked matmul rounds its PSUM sum. Used when ``hᵀ``, ``acc``, two buffers of one block of
weights and the row tiles' working set fit SBUF (``choose_block``). When they do not for all
the rows, the rows go in the fewest groups (2, 4 or 8) that fit, each group staging its rows
and running every block, so each weight is read once per group (``plan_block``: only while
those reloads move fewer bytes than the MLP input and residual would through HBM); otherwise
the row pipeline lowers the ops as before. With at most ``PAIR`` row tiles and at most
``STRAIGHT_BLOCKS`` blocks the blocks run unrolled, each with its own weight tiles, the down
projections skewed across blocks (``_BlockEmitter.straight_blocks``). The widest block whose
emitted SBUF peak fits is used (``emit_widest``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...ir.traits import Elementwise
from ...ir.value import Value
from ...nki.types import Access, Affine, DimSlice
from ...nki.types import ds as _ds
from ...tensor import ops as T
from .attention_out import kept_tiles
from .group_emit import GroupEmitter
from .groups import FusionGroup
from .instance import LoopSpec
from .loopnest import Shifted, loop_signature, run_loop_nest
from .matmul import lower_matmul
from .matmul_chunks import B_GROUP_CHUNKS, ChunkTiles
from .mlp_down_rows import act_columns, load_rows, rows_home
from .mlp_prologue import Prologue, emit_prologue, kept_bytes
from .pipeline import group_member
from .resident import MARGIN_BYTES, erase_from, region_peak
from .views import is_layout_convert

BLOCK_WIDTHS = (1024, 512, 256, 128)  # intermediate columns per block, widest that fits first
SBUF_MARGIN = 16 * 1024  # bytes per partition left for what the estimate does not see
ROW_GROUPS = (2, 4, 8)  # row groups tried when all the rows do not fit SBUF
PAIR = 2  # row tiles per loop iteration (measured best of 2, 4, 8 under the cost model)
LAG = 1  # a row tile's down projection follows the next row tile's up projections
STRAIGHT_BLOCKS = 4  # at most this many blocks of at most PAIR row tiles run unrolled
ACC_ZERO_ENGINE = "gpsimd"  # zeroes the fp32 accumulator (VectorE adds into it)


@dataclass
class MlpBlock:
    """The matched items: up projections, the fusion group between, the down projection, the
    optional epilogue group, and the items they consume (by id)."""

    ups: list  # MatmulOps reading the same A
    act_group: FusionGroup
    act: Value
    down: T.MatmulOp
    epilogue: FusionGroup | None
    consumed: set
    prelude: list  # view items between them, lowered first
    d_values: list  # the down projection's result and its layout conversions (aliases)
    width: int = 0
    prologue: Prologue | None = None  # the row pipeline computing h, run as hᵀ's staging loop
    rows: int = 0  # rows per row group (all the rows, or a divisor when they do not fit SBUF)


def _is_weight(v: Value, produced: set) -> bool:
    return v.type.rank == 2 and v not in produced


def _unit_batch(v: Value) -> bool:
    return all(e == 1 for e in v.type.shape[:-2])


def _produced(items: list, i: int, quiet) -> set:
    """Values computed by the items before ``items[i]`` (views of kernel inputs are weights)."""
    produced = set()
    for it in items[:i]:
        if isinstance(it, FusionGroup):
            produced |= {op.result for op in it.ops}
        elif not quiet(it):
            produced |= set(it.results)
    return produced


def _up_projections(items: list, i: int, quiet, consumed: set):
    """(up matmuls sharing A, prelude view items, index of the next item) or None."""
    ups, prelude = [], []
    j = i
    while j < len(items) and not isinstance(items[j], FusionGroup):
        it = items[j]
        if isinstance(it, T.MatmulOp):
            if ups and it.operand(0) is not ups[0].operand(0):
                return None
            ups.append(it)
        elif quiet(it) and not any(u in {m.result for m in ups} for u in it.operands):
            prelude.append(it)
        else:
            return None
        consumed.add(id(it))
        j += 1
    if not 1 <= len(ups) <= 2 or j >= len(items):
        return None
    return ups, prelude, j


def _act_value(g: FusionGroup, up_values: set, outputs: set) -> Value | None:
    """The one value the element-wise group ``g`` passes on, when it reads only the up
    projections (and constants) and the up projections feed only it."""
    members = set(g.ops)
    if any(not all(u.op in members for u in v.uses) for v in up_values):
        return None
    for op in g.ops:
        if not (op.has_trait(Elementwise) or isinstance(op, T.CastOp)):
            return None
        external = [u for u in op.operands if u.defining_op not in members and u not in up_values]
        if any(not isinstance(u.defining_op, T.FullOp) for u in external):
            return None
    leaving = [
        op.result for op in g.ops if op.result in outputs or any(u.op not in members for u in op.result.uses)
    ]
    return leaving[0] if len(leaving) == 1 else None


def _down_projection(items: list, j: int, act: Value, produced: set, consumed: set):
    """(the down matmul reading ``act`` or its layout conversions, next index) or None."""
    a_down = {act}
    while j < len(items) and is_layout_convert(items[j]) and items[j].operand(0) in a_down:
        a_down.add(items[j].result)
        consumed.add(id(items[j]))
        j += 1
    if j >= len(items) or not isinstance(items[j], T.MatmulOp):
        return None
    down = items[j]
    if down.operand(0) not in a_down or not _is_weight(down.operand(1), produced):
        return None
    if any(u.op is not down and u.op.result not in a_down for v in a_down for u in v.uses):
        return None
    if not _unit_batch(down.result):
        return None
    consumed.add(id(down))
    return down, j + 1


def _epilogue_group(items: list, j: int, down, plans: dict, row_local):
    """(the fusion group reading the down result row-aligned, the result and its layout
    conversions read by it) or (None, [result])."""
    d_values = [down.result]
    while j < len(items) and is_layout_convert(items[j]) and items[j].operand(0) in d_values:
        d_values.append(items[j].result)
        j += 1
    epi = items[j] if j < len(items) and isinstance(items[j], FusionGroup) else None
    if epi is None:
        return None, [down.result]
    plan = plans[epi][0]
    reads = any(u in d_values for op in epi.ops for u in op.operands)
    if (
        not reads
        or plan.domain != down.result.type.shape
        or group_member(epi, plan, row_local, plans[epi][1]) is None
    ):
        return None, [down.result]  # the result is stored; its conversions lowered as usual
    return epi, d_values


def match_mlp_block(items: list, i: int, plans: dict, row_local, outputs: set, quiet) -> MlpBlock | None:
    """The MLP block starting at ``items[i]`` (an up projection), or None. ``quiet(item)``: the
    item may be lowered before the block (views of weights)."""
    produced = _produced(items, i, quiet)
    consumed: set = set()
    found = _up_projections(items, i, quiet, consumed)
    if found is None:
        return None
    ups, prelude, j = found
    a = ups[0].operand(0)
    shape = ups[0].result.type.shape
    if a.type.rank < 2 or not _unit_batch(a):
        return None
    if any(not _is_weight(m.operand(1), produced) or m.result.type.shape != shape for m in ups):
        return None
    g = items[j]
    act = _act_value(g, {m.result for m in ups}, outputs)
    plan = plans[g][0]
    if act is None or plan.domain != shape or group_member(g, plan, row_local, plans[g][1]) is None:
        return None
    consumed.add(id(g))
    found = _down_projection(items, j + 1, act, produced, consumed)
    if found is None or found[0].operand(0).type.shape != shape:
        return None
    down, j = found
    epi, d_values = _epilogue_group(items, j, down, plans, row_local)
    if epi is not None:
        consumed |= {id(epi)} | {id(v.defining_op) for v in d_values[1:]}
    return MlpBlock(ups, g, act, down, epi, consumed, prelude, d_values)


def plan_block(ctx, blk: MlpBlock, plans: dict) -> bool:
    """Set ``blk.rows`` and ``blk.width``: all the rows at once when they fit SBUF, else the
    fewest row groups (each reading every weight once more) that fit, as long as reloading the
    weights moves fewer bytes than the rows' round trips through HBM it avoids (the MLP input
    and the residual, stored and loaded back). False when nothing fits."""
    p = ctx.partitions
    s = blk.ups[0].operand(0).type.shape[-2]
    blk.rows, blk.width = s, choose_block(ctx, blk, plans, s)
    if blk.width is not None:
        return True
    weights = sum(m.operand(1).type.size * m.operand(1).type.dtype.itemsize for m in blk.ups + [blk.down])
    d = blk.down.result.type.shape[-1]
    round_trips = 4 * s * d * blk.down.result.type.dtype.itemsize
    for g in ROW_GROUPS:
        if s % (g * p) or s // g < 2 * p or (g - 1) * weights > round_trips:
            continue
        blk.rows, blk.width = s // g, choose_block(ctx, blk, plans, s // g)
        if blk.width is not None:
            return True
    return False


def choose_block(ctx, blk: MlpBlock, plans: dict, s: int) -> int | None:
    """The widest intermediate block (``BLOCK_WIDTHS``) whose SBUF working set for ``s`` rows
    fits, or None."""
    p = ctx.partitions
    a = blk.ups[0].operand(0)
    k = a.type.shape[-1]
    inter = blk.ups[0].result.type.shape[-1]
    d = blk.down.result.type.shape[-1]
    a_isz = a.type.dtype.itemsize
    w_isz = max(m.operand(1).type.dtype.itemsize for m in blk.ups + [blk.down])
    nk, n_rt = -(-k // p), -(-s // p)
    if k % p or (n_rt < 2 and blk.prologue is None):
        # one row tile: the row pipeline reads every weight once already (a fused prologue
        # still keeps its rows and the intermediate, which that pipeline may spill, on chip)
        return None
    kept = kept_bytes(blk.prologue, p, s)  # the epilogue's operands held for all rows
    h_t, acc = nk * s * max(a_isz, 2) + kept, n_rt * d * 4
    room = ctx.target.sbuf_bytes_per_partition - SBUF_MARGIN
    epi = plans[blk.epilogue][1] * d if blk.epilogue is not None else 0
    staging = 3 * k * 4
    if blk.prologue is not None:  # the pipeline's own row tiles (weights streamed at worst)
        staging = max(staging, sum(m.sbuf_bytes for m in blk.prologue.pipe.members))
    if max(h_t + staging, kept + acc + 2 * (epi + d * 4)) > room:  # prologue, epilogue
        return None
    for bw in BLOCK_WIDTHS:
        if inter % bw:
            continue
        nb = bw // p
        weights = 2 * (len(blk.ups) * nk * bw + nb * d) * w_isz  # two buffers: prefetch
        work = 2 * PAIR * (len(blk.ups) * bw * 4 + plans[blk.act_group][1] * bw + nb * p * 4)
        if h_t + acc + weights + work <= room:
            return bw
    return None


def emit_widest(ctx, blk: MlpBlock, outputs: set, row_local, plans: dict) -> None:
    """Emit the block at the widest of ``BLOCK_WIDTHS`` that is wider than ``choose_block``'s
    width and whose emitted SBUF peak (``region_peak``: tiles live from alloc to last use) plus
    ``MARGIN_BYTES`` fits a partition, else at ``choose_block``'s width. The formula assumes two
    buffers of the block's weights and fp32 row tiles; the peak is what the verifier counts
    (single buffers: rotation adds a second one only where it still fits). Wider blocks read
    the same bytes in fewer, longer runs and give each row tile more TensorE work per block
    (fewer fp32 accumulations of the down projection into ``acc``)."""
    inter = blk.ups[0].result.type.shape[-1]
    chosen = blk.width
    block = ctx.b._blocks[-1]
    saved = (dict(ctx.homes), dict(ctx._views), ctx._scratch)
    sbuf = ctx.target.sbuf_bytes_per_partition
    for bw in BLOCK_WIDTHS:
        if bw <= chosen or inter % bw:
            continue
        before = block.last
        blk.width = bw
        emit_mlp_block(ctx, blk, outputs, row_local, plans)
        first = before.next_op if before is not None else block.first
        if region_peak(first, kept_tiles(ctx)) + MARGIN_BYTES <= sbuf:
            return
        erase_from(block, first)
        ctx.homes, ctx._views, ctx._scratch = dict(saved[0]), dict(saved[1]), saved[2]
    blk.width = chosen
    emit_mlp_block(ctx, blk, outputs, row_local, plans)


class _Deferred:
    """A call postponed until the skewed order reaches it."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __call__(self):
        return self.fn(*self.args)


class _RowWindow:
    """A K-major operand held for all rows ([p, nk, S]) seen as the row tile at ``m0``."""

    def __init__(self, tiles: ChunkTiles, m0):
        self.tiles, self.m0 = tiles, Affine.of(m0)

    def bounds(self) -> set[int]:
        return self.tiles.bounds()

    def access(self, c, seg_start: int, kt: int, cols: DimSlice) -> Access:
        return self.tiles.access(c, seg_start, kt, DimSlice(self.m0 + cols.offset, cols.size, cols.stride))


def _row_groups(b, s: int, p: int, n: int, body) -> None:
    """body([(m0, mt, row tile index), ...]) over the rows in tiles of ``p``, ``n`` full tiles
    per call (a ``fori_loop`` over groups), then the leftover full tiles and the partial one."""
    full, rem = s // p, s % p
    groups = full // n
    if groups == 1:
        body([(t * p, p, t) for t in range(n)])
    elif groups > 1:
        with b.fori_loop(0, groups) as q:
            body([(Affine.of(q) * (n * p) + t * p, p, Affine.of(q) * n + t) for t in range(n)])
    left = [(t * p, p, t) for t in range(groups * n, full)]
    if rem:
        left.append((full * p, rem, full))
    if left:
        body(left)


def _row_tiles(b, s: int, p: int, body) -> None:
    """body(m0, mt, row tile index) over the rows in tiles of ``p``."""
    full, rem = s // p, s % p
    if full == 1:
        body(0, p, 0)
    elif full > 1:
        with b.fori_loop(0, full) as r:
            body(Affine.of(r) * p, p, r)
    if rem:
        body(full * p, rem, full)


def _stage_h_t(ctx, blk: MlpBlock, em0, idx: list, base, s: int):
    """hᵀ for the ``s`` rows from ``base``, K on the partitions: [p, K / p, s] (natural loads +
    TensorE transposes, one PSUM bank of blocks per copy; K-major DMAs when K is not
    contiguous)."""
    b, p, tg = ctx.b, ctx.partitions, ctx.target
    k = em0.k
    nk = k // p
    ctx.at_op(blk.ups[0])
    h_t = b.alloc((p, nk, s), em0.a_dt, "sbuf", name="h_t")
    per_bank = max(1, tg.psum_bank_bytes // (p * em0.a_dt.itemsize))

    def stage(m0, mt, _rt):
        if not em0.transpose["a"]:
            for c in range(nk):
                b.dma_copy(
                    dst=Access(h_t, (_ds(0, p), _ds(c, 1), _ds(m0, mt))),
                    src=em0._window("a_km", idx, c * p, p, Affine.of(m0) + base, mt),
                )
            return
        nat = b.alloc((p, k), em0.a_dt, "sbuf", name="h_nat")
        src = em0._window("a_nat", idx, Affine.of(m0) + base, mt, 0, k)
        b.dma_copy(dst=Access(nat, (_ds(0, mt), _ds(0, k))), src=src)
        for c0 in range(0, nk, per_bank):
            ng = min(per_bank, nk - c0)
            ps = b.alloc((p, per_bank, p), em0.a_dt, "psum", name="ps_t")
            for c in range(ng):
                b.nc_transpose(
                    dst=Access(ps, (_ds(0, p), _ds(c, 1), _ds(0, mt))),
                    data=Access(nat, (_ds(0, mt), _ds((c0 + c) * p, p))),
                )
            b.tensor_copy(
                dst=Access(h_t, (_ds(0, p), _ds(c0, ng), _ds(m0, mt))),
                src=Access(ps, (_ds(0, p), _ds(0, ng), _ds(0, mt))),
            )

    _row_tiles(b, s, p, stage)
    return h_t


EVACUATE = "scalar"  # PSUM -> SBUF copies of g, u and actᵀ: VectorE does the accumulation


def _up_block(b, p: int, fmax: int, at: _RowWindow, nk: int, mt: int, cache: ChunkTiles, bw: int, dst):
    """dst[:mt, :bw] = the row tile of h @ the block's weight columns: the K chunks accumulate
    in one PSUM bank per ``fmax`` columns, copied out (rounded to dst's dtype) on ScalarE."""
    for j0 in range(0, bw, fmax):
        nj = min(fmax, bw - j0)
        ps = b.alloc((p, fmax), "f32", "psum", name="up_ps")
        for c in range(nk):
            t, c0 = cache.part(c)
            b.nc_matmul(
                dst=Access(ps, (_ds(0, mt), _ds(0, nj))),
                stationary=at.access(c, 0, p, _ds(0, mt)),
                moving=Access(t, (_ds(0, p), _ds(c - c0, 1), _ds(j0, nj))),
                accumulate=c > 0,
            )
        src = Access(ps, (_ds(0, mt), _ds(0, nj)))
        b.tensor_copy(dst=Access(dst, (_ds(0, mt), _ds(j0, nj))), src=src, engine=EVACUATE)


def _transposes_act(ctx, dt) -> bool:
    """actᵀ of dtype ``dt`` comes from TensorE transposes (else from ``_a_from_tile``)."""
    return dt.name in ctx.target.dtypes_of("tensor") and dt.itemsize >= 2


def _transpose_act(ctx, down, act_t, a_t, nb: int, mt: int, row_runs: bool) -> None:
    """a_t[:, c, :mt] = transpose of act_t[:mt, c·p : (c+1)·p] for every chunk c, or of its
    columns ``r·nb + c`` (``mlp_down_rows.act_columns``) with ``row_runs``: as many transposes
    per PSUM bank as it holds, one ScalarE copy per bank (casting to a_t's dtype)."""
    b, p = ctx.b, ctx.partitions
    dt = act_t.type.dtype
    if not _transposes_act(ctx, dt):
        if row_runs:
            raise AssertionError(f"lowering bug: Wd in row runs but actᵀ of {dt.name} not transposed")
        for c in range(nb):
            down._a_from_tile(Access(a_t, (_ds(0, p), _ds(c, 1), _ds(0, mt))), act_t, c * p, p, mt)
        return
    per_bank = max(1, ctx.target.psum_bank_bytes // (p * dt.itemsize))

    def cols(c: int):
        return act_columns(c, p, nb) if row_runs else _ds(c * p, p)

    for c0 in range(0, nb, per_bank):
        ng = min(per_bank, nb - c0)
        ps = b.alloc((p, per_bank, p), dt, "psum", name="ps_t")
        for c in range(ng):
            b.nc_transpose(
                dst=Access(ps, (_ds(0, p), _ds(c, 1), _ds(0, mt))),
                data=Access(act_t, (_ds(0, mt), cols(c0 + c))),
            )
        b.tensor_copy(
            dst=Access(a_t, (_ds(0, p), _ds(c0, ng), _ds(0, mt))),
            src=Access(ps, (_ds(0, p), _ds(0, ng), _ds(0, mt))),
            engine=EVACUATE,
        )


def _stage(ctx, blk: MlpBlock, em0, idx: list, outputs: set, row_local, base, rows: int):
    """hᵀ for the ``rows`` rows from ``base``: computed by the fused prologue's pipeline, or
    loaded and transposed."""
    if blk.prologue is None:
        return _stage_h_t(ctx, blk, em0, idx, base, rows)
    p = ctx.partitions
    ctx.at_op(blk.ups[0])
    h_t = ctx.b.alloc((p, em0.k // p, rows), em0.a_dt, "sbuf", name="h_t")
    group = None
    if rows != em0.m:
        dim = blk.prologue.pipe.members[0].loops[0].dim
        group = ([LoopSpec("P", dim, p, rows // p, 0)], base, rows)
    emit_prologue(ctx, blk.prologue, blk, outputs, row_local, h_t, group)
    return h_t


def _drive_act(gem: GroupEmitter, top, levels: int, rows: tuple, cols: tuple) -> None:
    """Run the element-wise group on one (row tile, block) instance: ``rows`` / ``cols`` are
    (dim, offset, extent). Without loops (one row tile, one block) it runs whole here."""
    inst_p = top.enter(*rows)
    inst = inst_p.enter(*cols)
    chain = [top, inst_p, inst] if levels == 2 else [top, inst]
    for lv in range(1 if levels else 0, levels + 1):
        gem.before(lv, chain[lv])
    for lv in range(levels, 0 if levels else -1, -1):
        gem.after(lv, chain[lv])


def _act_transposed(ctx, down, act_t, mt: int, nb: int, row_runs: bool):
    """actᵀ of the row tile ``act_t`` (``mt`` rows) in a new [p, nb, p] tile, by TensorE
    transposes (``_transpose_act``)."""
    a_t = ctx.b.alloc((ctx.partitions, nb, ctx.partitions), down.a_dt, "sbuf", name="act_t")
    _transpose_act(ctx, down, act_t, a_t, nb, mt, row_runs)
    return a_t


def _down_rows(ctx, down, wd, acc, a_t, row: tuple, nb: int, between=None) -> None:
    """acc[row tile] += actᵀ (``a_t``) · the block's rows of Wd (``row`` = (rows, row tile
    index)): one PSUM bank per 512 columns, added on VectorE; ``between()`` (if given) runs
    after the first bank's matmuls."""
    b, p, fmax = ctx.b, ctx.partitions, ctx.target.psum_bank_fmax
    mt, rt = row
    d = down.n
    for n0 in range(0, d, fmax):
        if n0 and between is not None:
            between()
            between = None
        nj = min(fmax, d - n0)
        ps = b.alloc((p, fmax), "f32", "psum", name="acc")
        for c in range(nb):
            b.nc_matmul(
                dst=Access(ps, (_ds(0, mt), _ds(0, nj))),
                stationary=Access(a_t, (_ds(0, p), _ds(c, 1), _ds(0, mt))),
                moving=Access(wd, (_ds(0, p), _ds(c, 1), _ds(n0, nj))),
                accumulate=c > 0,
            )
        dst = Access(acc, (_ds(0, mt), _ds(Affine.of(rt) * d + n0, nj)))
        b.tensor_tensor(dst=dst, data1=dst, data2=Access(ps, (_ds(0, mt), _ds(0, nj))), op="add")


def _over_row_groups(ctx, s: int, rows: int, group) -> None:
    """group(first row) for all ``s`` rows at once, or in a loop over groups of ``rows``
    (each stages its rows and reads every weight again; HBM views go before the loop)."""
    if rows == s:
        group(Affine.of(0))
        return
    b = ctx.b
    outer = ctx.hoist_before
    with b.fori_loop(0, s // rows) as gi:
        if outer is None:
            ctx.hoist_before = b._blocks[0].last  # this loop
        try:
            group(Affine.of(gi) * rows)
        finally:
            ctx.hoist_before = outer


def emit_mlp_block(ctx, blk: MlpBlock, outputs: set, row_local, plans: dict) -> None:
    """Emit the blocked loop nest of the module docstring."""
    _BlockEmitter(ctx, blk, outputs, row_local, plans).emit()


class _BlockEmitter:
    """The MLP block's emission: its matmul emitters, the element-wise group's emitter and
    the pieces of one (block, row tile) step."""

    def __init__(self, ctx, blk: MlpBlock, outputs: set, row_local, plans: dict):
        self.ctx, self.blk, self.outputs, self.row_local, self.plans = ctx, blk, outputs, row_local, plans
        p = self.p = ctx.partitions
        self.bw = bw = blk.width
        self.tiles: dict = {}
        self.between = None  # run after the next step's first up projection (skewed)
        self.finish = None  # finish(m0, mt): after a row tile's down projection (the last block)
        fused = blk.prologue is not None
        self.ups = [
            lower_matmul(ctx, m, pipe=self.tiles, a_provided=fused, store=False, run=False) for m in blk.ups
        ]
        self.down = lower_matmul(ctx, blk.down, pipe=self.tiles, a_provided=True, store=False, run=False)
        em0 = self.ups[0]
        self.s, k, self.inter, self.d = em0.m, em0.k, em0.n, self.down.n
        self.idx = [0] * len(em0.batch)
        self.rows = blk.rows or self.s
        self.nk, self.nb, self.n_rt = k // p, bw // p, -(-self.rows // p)
        self.nblocks = self.inter // bw
        self.fmax = ctx.target.psum_bank_fmax
        # Wd's block rows read in runs of nb rows per partition (mlp_down_rows.py) when actᵀ
        # comes from TensorE transposes, which can read the act tile's columns strided
        self.row_runs = _transposes_act(ctx, blk.act.type.dtype)
        if self.row_runs:  # a view, emitted at top level before any loop opens
            self.wd_rows = ctx.view(rows_home(self.down.hb, p, self.nb))

    def emit(self) -> None:
        ctx, blk = self.ctx, self.blk
        # the element-wise group, driven one (row tile, block) instance at a time
        plan = replace(self.plans[blk.act_group][0], f_chunk=self.bw)
        up_values = [m.result for m in blk.ups]
        self.gem = gem = GroupEmitter(
            ctx,
            blk.act_group,
            [],
            plan,
            self.row_local,
            pipe=self.tiles,
            provided=up_values,
            publish={blk.act},
        )
        self.p_dim, self.f_dim = plan.p_dims[0], plan.f_dims[0]
        gem.prepare()
        self.top = gem.top_instance()
        self.levels = len(gem.loops)
        if self.levels:  # else (one row tile, one block) the group runs whole per instance below
            gem.before(0, self.top)
        _over_row_groups(ctx, self.s, self.rows, self.group)
        if self.levels:
            gem.after(0, self.top)

    def group(self, base) -> None:
        """Stage the group's rows, zero ``acc``, run every block, then the epilogue."""
        ctx, b, p, blk = self.ctx, self.ctx.b, self.p, self.blk
        rows, n_rt, d = self.rows, self.n_rt, self.d
        h_t = _stage(ctx, blk, self.ups[0], self.idx, self.outputs, self.row_local, base, rows)
        ctx.at_op(blk.down)
        acc = b.alloc((p, n_rt * d), "f32", "sbuf", name="mlp_acc")  # row tile r at columns r·d
        # zeroed by GpSimd, idle here, not VectorE, which adds the blocks' partial products into
        # it (Qwen3-0.6B layer at seq 2048: 1,553.8 -> 1,548.4 µs scheduled; 128 / 512 unchanged)
        b.memset(dst=Access(acc, (_ds(0, p), _ds(0, n_rt * d))), value=0.0, engine=ACC_ZERO_ENGINE)
        run = (h_t, acc, base)
        loops, parts = _epilogue_parts(
            ctx, blk, self.outputs, self.row_local, self.plans, acc, (base, rows), d
        )
        if rows == self.s and p <= rows <= PAIR * p and 1 < self.nblocks <= STRAIGHT_BLOCKS:
            self.straight_blocks(run)
        elif self.nblocks == 1 or rows != self.s or [lp.kind for lp in loops] != ["P"]:
            if self.nblocks == 1:
                self.block(0, run)
            else:
                with b.fori_loop(0, self.nblocks) as j:
                    self.block(j, run)
        else:
            # the epilogue of a row tile right after the last block's down projection of it:
            # its rounding, residual add and store overlap the later row tiles' projections
            with b.fori_loop(0, self.nblocks - 1) as j:
                self.block(j, run)
            rows_after = _RowsAfter(parts)
            self.finish = rows_after.row
            self.block(self.nblocks - 1, run)
            self.finish = None
            rows_after.close()
            return
        run_loop_nest(b, loops, parts)

    def weights(self, j):
        """Block ``j``'s columns of the up weights and rows of Wd, loaded: (caches, wd)."""
        ctx, b, p, bw, nb, d = self.ctx, self.ctx.b, self.p, self.bw, self.nb, self.d
        col = Affine.of(j) * bw
        caches = []
        for em, m in zip(self.ups, self.blk.ups):
            ctx.at_op(m)
            cache = ChunkTiles.alloc(b, p, self.nk, bw, em.b_dt, "w_up", B_GROUP_CHUNKS, split=em.b_split)
            em._load_b_cache(cache, self.idx, col, bw)
            caches.append(cache)
        ctx.at_op(self.blk.down)
        lead = tuple(_ds(0, 1) for _ in self.idx)
        wd = b.alloc((p, nb, d), self.down.b_dt, "sbuf", name="w_down")
        if self.row_runs:
            load_rows(b, self.wd_rows, lead, j, wd, p, nb, d)
            return caches, wd
        b.dma_copy(
            dst=Access(wd, (_ds(0, p), _ds(0, nb), _ds(0, d))),
            src=Access(
                self.down.views["b_chunks"], lead + (_ds(0, p), _ds(Affine.of(j) * nb, nb), _ds(0, d))
            ),
        )
        return caches, wd

    def up_and_act(self, j, caches, run, m0, mt: int):
        """The row tile's up projections on block ``j`` and the element-wise group: its act tile."""
        ctx, b, p, bw, tiles = self.ctx, self.ctx.b, self.p, self.bw, self.tiles
        h_t, _acc, base = run
        at = _RowWindow(ChunkTiles.one(h_t, self.nk), m0)
        for em, m, cache in zip(self.ups, self.blk.ups, caches):
            ctx.at_op(m)
            t = b.alloc((p, bw), em.c_dt, "sbuf", name=m.result.name_hint or "up")
            _up_block(b, p, self.fmax, at, self.nk, mt, cache, bw, t)
            tiles[m.result] = t
            if self.between is not None:  # after the first up projection (skewed)
                self.between()
                self.between = None
        self.gem.note("vector", self.d)  # the accumulation below: balance the group's engines
        rows = (self.p_dim, Affine.of(m0) + base, mt)
        _drive_act(self.gem, self.top, self.levels, rows, (self.f_dim, Affine.of(j) * bw, bw))
        return tiles[self.blk.act]

    def skewed(self, steps, acc) -> None:
        """Run ``steps`` ((thunk giving the step's act tile and Wd block, rows, row tile))
        with each step's down projection after the next ``LAG`` steps' up projections, so
        TensorE has those while the step's element-wise chain runs. The oldest pending step's
        actᵀ transposes go between the next step's first and second up projections, and the
        last step's between the first and second PSUM banks of the down projection before it:
        each actᵀ PSUM copy then runs while TensorE has other work, not right before the down
        projection that reads it (Qwen3-0.6B layer at seq 512: twelve 1.5 µs TensorE gaps)."""
        pending = []  # [rows, row tile, act tile, Wd block, actᵀ (None until transposed)]

        def transpose(e) -> None:
            if e[4] is None:
                self.ctx.at_op(self.blk.down)
                e[4] = _act_transposed(self.ctx, self.down, e[2], e[0], self.nb, self.row_runs)

        for i, (thunk, mt, rt) in enumerate(steps):
            self.between = (lambda e=pending[0]: transpose(e)) if pending else None
            pending.append([mt, rt, *thunk(), None])
            self.between = None
            while len(pending) > (LAG if i + 1 < len(steps) else 0):
                e = pending.pop(0)
                transpose(e)
                self.ctx.at_op(self.blk.down)
                after = (lambda e=pending[0]: transpose(e)) if pending and i + 1 == len(steps) else None
                _down_rows(self.ctx, self.down, e[3], acc, e[4], (e[0], e[1]), self.nb, after)
                if self.finish is not None:
                    self.finish(Affine.of(e[1]) * self.p, e[0])

    def block(self, j, run) -> None:
        """Block ``j`` (its weights loaded here) over the rows, a pair of row tiles at a time."""
        caches, wd = self.weights(j)

        def step(m0, mt):
            return self.up_and_act(j, caches, run, m0, mt), wd

        def row_tiles(insts):
            self.skewed([(_Deferred(step, m0, mt), mt, rt) for m0, mt, rt in insts], run[1])

        _row_groups(self.ctx.b, self.rows, self.p, PAIR, row_tiles)

    def straight_blocks(self, run) -> None:
        """Few row tiles and blocks: the blocks unrolled, each block's weights in tiles of its
        own, loaded right before its first up projections (top-level tiles, which load_hoist.py
        may issue earlier), and the down projections skewed across blocks as well: block j+1's
        up projections run on TensorE while block j's element-wise chain runs."""
        loaded: dict = {}
        p, rows = self.p, self.rows

        def step(j, m0, mt):
            if j not in loaded:
                loaded[j] = self.weights(j)
            caches, wd = loaded[j]
            return self.up_and_act(j, caches, run, m0, mt), wd

        steps = [
            (_Deferred(step, j, t * p, min(p, rows - t * p)), min(p, rows - t * p), t)
            for j in range(self.nblocks)
            for t in range(self.n_rt)
        ]
        self.skewed(steps, run[1])


class _AccRows:
    """Epilogue participant: the row tile of ``acc`` rounded to the down projection's dtype,
    published for the epilogue group and stored when the result leaves the block."""

    def __init__(self, ctx, values: list, acc, loops, store_home, p: int, kept: dict | None = None, base=0):
        self.ctx, self.v, self.acc, self.loops, self.p = ctx, values[0], acc, loops, p
        self.base = Affine.of(base)  # the group's first row (offsets here are relative to it)
        self.values = values
        self.view = None if store_home is None else ctx.view(store_home)
        self.tiles: dict = {}
        self.kept = kept or {}  # value kept on chip by the prologue -> its all-rows buffer

    def prepare(self) -> None:
        return None

    def top_instance(self):
        return (0, min(self.p, self.v.type.shape[-2]))

    def enter(self, inst, level: int, offset, extent: int):
        return (offset, extent) if self.loops[level].kind == "P" else inst

    def before(self, level: int, inst) -> None:
        if level != len(self.loops):
            return
        m0, mt = inst
        rt = Affine.of(m0)
        d = self.v.type.shape[-1]
        col = Affine(rt.const // self.p * d, tuple((v, c // self.p * d) for v, c in rt.terms))
        self.ctx.at_op(self.v.defining_op)
        t = self.ctx.b.alloc((self.p, d), self.v.type.dtype, "sbuf", name=self.v.name_hint or "d")
        self.ctx.b.tensor_copy(
            dst=Access(t, (_ds(0, mt), _ds(0, d))), src=Access(self.acc, (_ds(0, mt), _ds(col, d)))
        )
        for v in self.values:
            self.tiles[v] = t
        for v, buf in self.kept.items():
            self.ctx.at(f"kept {self.ctx.name(v)}")
            kt = self.ctx.b.alloc((self.p, d), v.type.dtype, "sbuf", name="kept_rows")
            self.ctx.b.tensor_copy(
                dst=Access(kt, (_ds(0, mt), _ds(0, d))), src=Access(buf, (_ds(0, mt), _ds(col, d)))
            )
            self.tiles[v] = kt
        if self.view is not None:
            self.ctx.b.dma_copy(
                dst=Access(self.view, (_ds(Affine.of(m0) + self.base, mt), _ds(0, d))),
                src=Access(t, (_ds(0, mt), _ds(0, d))),
            )

    def after(self, _level: int, _inst) -> None:
        return None


class _RowsAfter:
    """The epilogue's participants (one partition-chunk loop) driven one row tile at a time:
    ``row(m0, mt)`` right after the last block's down projection of that row tile."""

    def __init__(self, parts: list):
        self.parts = parts
        for p in parts:
            p.prepare()
        self.tops = [p.top_instance() for p in parts]
        for p, top in zip(parts, self.tops):
            p.before(0, top)

    def row(self, m0, mt: int) -> None:
        insts = [p.enter(top, 0, m0, mt) for p, top in zip(self.parts, self.tops)]
        for p, inst in zip(self.parts, insts):
            p.before(1, inst)
        for p, inst in zip(self.parts, insts):
            p.after(1, inst)

    def close(self) -> None:
        for p, top in zip(self.parts, self.tops):
            p.after(0, top)


def _epilogue_parts(ctx, blk: MlpBlock, outputs: set, row_local, plans: dict, acc, group: tuple, d: int):
    """The epilogue's row loops and participants over the group's rows (``group`` = (first
    row, rows)): the row tile of ``acc`` rounded (and stored) and the fusion group after it."""
    base, s = group
    whole = s == blk.down.result.type.shape[-2]
    v = blk.down.result
    epi = blk.epilogue
    inside = set(epi.ops) if epi is not None else set()
    inside |= {x.defining_op for x in blk.d_values[1:]}
    store = any(x in outputs or any(u.op not in inside for u in x.uses) for x in blk.d_values)
    home = ctx.home_for_store(v).reshape((v.type.shape[-2], d)) if store else None
    p = ctx.partitions
    loops = [LoopSpec("P", v.type.rank - 2, p, s // p, s % p)] if s > p else []
    kept = blk.prologue.buffers if blk.prologue is not None else {}
    rows = _AccRows(ctx, blk.d_values, acc, loops, home, p, kept, base)
    parts = [rows]
    if epi is not None:
        plan = plans[epi][0]
        escaping = [
            op.result
            for op in epi.ops
            if op.result in outputs or any(u.op not in inside for u in op.result.uses)
        ]
        provided = {u for op in epi.ops for u in op.operands if u in blk.d_values or u in kept}
        em = GroupEmitter(ctx, epi, escaping, plan, row_local, pipe=rows.tiles, provided=provided)
        if whole and loop_signature(em.loops) != loop_signature(loops):
            raise AssertionError("lowering bug: the MLP epilogue's loops differ from its rows")
        parts.append(em if whole else Shifted(em, base))
    return loops, parts
