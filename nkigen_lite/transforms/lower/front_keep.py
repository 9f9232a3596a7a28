"""The layer's front hands q, k and v to causal attention on chip.

A decoder layer's front (rmsnorm -> q / k / v projections -> per-head norms -> RoPE) is a row
pipeline (pipeline.py, pipeline_views.py) whose results reach ``tensor.causal_attention``
through views: ``q.transpose(0, 2, 1, 3)``, the GQA repeat's reshapes and transposes of k, the
head split of v. Lowered on their own, the pipeline stores q, k and v and the attention loads
them back (for Qwen3-0.6B at seq 512: 8 of the layer's 47 MB of HBM traffic). Here, when those
views only reorder (rows, heads, features) — the attention's per-KV-head view of an operand is
its root's rows, heads and features in row-major order — each such root is instead copied, row
tile by row tile, into an SBUF buffer ``[p, row tiles, free...]`` holding it for every row
(row ``t·p + i`` at ``[i, t]``), and the attention (causal_attention.py) reads its per-KV-head
operands from that buffer (``ctx.kept_rows``). The copies (VectorE) run where the stores ran,
in the pipeline's second stage. Nothing of a kept value reaches HBM. When the attention's output
can stay on chip for the O projection (attention_out.py), q is kept as one tile per KV head
(``[p, row tiles, R, d]`` each) and the attention writes O over it.

The buffers must fit beside the pipeline: the pipeline is first emitted with every weight
streamed and nothing kept, its SBUF peak measured (resident.py), and the roots are kept, largest
first, while the buffers, the peak, every weight resident and ``resident.MARGIN_BYTES`` fit a
partition — so no weight that was resident is streamed because of a kept buffer. When the
attention runs one straight-line block per KV head (q kept per KV head, attention_out.py), a k
or v root that does not fit whole keeps its first KV heads' parts (one buffer each, copied by
SBUF -> SBUF DMA) while they fit the room left; the other heads' columns are stored to HBM by
one DMA per row tile and the attention loads those heads from there. Those heads are sized
without ``MARGIN_BYTES`` and their fit is measured instead: if the peak with every weight
streamed leaves a weight out, the pipeline is emitted once more with every weight resident and
its measured peak (the tiles as the verifier counts them) must fit SBUF; else one head fewer is
kept. Since the peak with every weight streamed is not the one that must fit, the first try
keeps ``EXTRA_HEADS`` head more than that room holds. At seq 2048 of Qwen3-0.6B (q 64 KiB, k
and v 32 KiB per partition beside 64 KiB of weights) q and k fit whole and 5 of v's 8 KV heads
(4 KiB each) in the 19 KiB left (the rmsnorm of h two row tiles ahead, pipeline_skew.py: 4
heads and one extra; 11 KiB with the margin); v's other 3 heads go through HBM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...ir.types import row_major_strides
from ...ir.value import Value
from ...nki.types import Access, Affine
from ...nki.types import ds as _ds
from ...tensor import ops as T
from ...tensor.composites_causal_attention import CausalAttentionOp
from .attention_out import match_out_chain
from .causal_attention_dispatch import is_long
from .homes import HbmHome
from .matmul_prefetch import choose_prefetch
from .pipeline import RowPipeline, _emit_members
from .resident import MARGIN_BYTES, choose_resident, erase_from, region_peak
from .view_chains import _forward

_LINKS = (T.ReshapeOp, T.TransposeOp)
# copies row tiles into the kept buffers; under the scheduler VectorE (Qwen3-0.6B layer, seq
# 512 / 2048: 493.7 / 2,192.5 µs) beats GpSimd (494.0 / 2,199.8), an SBUF -> SBUF DMA (502.1 /
# 2,194.9) and ScalarE, which evacuates the projections (514.2 / 2,286.3)
COPY_ENGINE = "vector"
EXTRA_HEADS = 1  # KV heads tried beyond the room the streamed peak leaves (measured after)


def out_groups(op, partitions: int) -> int | None:
    """The KV heads of the attention ``op`` when its O can be written over the front's kept q
    (attention_out.py's docstring): O read only by the O projection through views, O's
    features as wide as q's, whole row tiles. None otherwise."""
    q, k = op.operands[:2]
    m, d = q.type.shape[-2:]
    if is_long(k.type.shape):  # the online-softmax kernel writes O per key block: not here
        return None
    # few units (every KV head in one list-scheduled block) with several query tiles were once
    # measured slower (4 / 2 heads at seq 2048: 947.7 -> 1,200.2 µs) and excluded;
    # with the diagonal mask in PSUM they gain (Qwen3-0.6B layer seq 512: 357.7 -> 352.8 µs;
    # TP = 2 / 4 ranks at seq 512: 267.8 / 221.0 -> 264.1 / 214.5, TP = 4 at 2048: 816.7 -> 794.8)
    if d != op.result.type.shape[-1] or d % partitions or m % partitions or match_out_chain(op) is None:
        return None
    return math.prod(op.operands[1].type.shape[:-2])


def keep_room(sbuf: int, peak: int, weights: int) -> int:
    """Bytes per partition the kept buffers may take: SBUF less the pipeline's peak with every
    weight streamed, every weight resident and ``MARGIN_BYTES``."""
    return sbuf - peak - MARGIN_BYTES - weights


@dataclass
class KeptFront:
    """The attention op, per root value the operand index it feeds and its view chain, and the
    roots chosen to stay on chip with their buffers."""

    attention: object
    chains: dict = field(default_factory=dict)  # root -> (operand index, [chain ops])
    buffers: dict = field(default_factory=dict)  # kept root -> [p, row tiles, free...] tile
    kept: list = field(default_factory=list)  # the roots kept, in operand order
    partial: dict = field(default_factory=dict)  # root -> its first KV heads kept (the rest stored)
    groups: int = 0  # KV heads of the attention when a root is kept in per-KV-head parts


def _walk(v: Value, pipe: RowPipeline):
    """(root, links from v back to it) when ``v`` is reshapes / transposes of a value the
    pipeline produces, each intermediate read once; else None."""
    links = []
    while pipe.root(v) not in pipe.produced:
        op = v.defining_op
        if not isinstance(op, _LINKS):
            return None
        links.append(op)
        v = op.operand(0)
        if pipe.root(v) not in pipe.produced and v.num_uses != 1:
            return None
    if v is not pipe.root(v) or not links:
        return None
    return v, links


def _rows_major(root: Value, links, heads: int, n: int, f: int, rows_rank: int) -> bool:
    """True when the attention's (rows, heads, features) view of the operand reached from
    ``root`` through ``links`` is ``root``'s rows and free elements in row-major order."""
    shape = root.type.shape
    if math.prod(shape[: rows_rank - 1]) != 1 or shape[rows_rank - 1] != n:
        return False
    width = math.prod(shape[rows_rank:])
    if width != heads * f:
        return False
    h = _forward(HbmHome(root, 0, shape, row_major_strides(shape)), links)
    h = h.reshape((heads, n, f)) if h is not None else None
    if h is None:
        return False
    return h.offset == 0 and h.transpose((1, 0, 2)).strides == (width, f, 1)


def match_front_keep(pipe: RowPipeline, items, i: int) -> KeptFront | None:
    """The causal attention reading the collected pipeline ``pipe`` through view chains that
    start at ``items[i]`` (every item up to the attention one of them), or None. The pipeline
    loops over row tiles, or (one row tile) has no loop."""
    if not pipe.members or len(pipe.members[0].loops) > 1:
        return None
    if pipe.members[0].loops and pipe.members[0].loops[0].kind != "P":
        return None
    ops = []
    j = i
    while j < len(items) and isinstance(items[j], _LINKS):
        ops.append(items[j])
        j += 1
    if j == len(items) or not isinstance(items[j], CausalAttentionOp):
        return None
    att = items[j]
    rows_rank = len(pipe.members[0].rows)
    found = KeptFront(att)
    for idx, x in enumerate(att.operands):
        w = _walk(x, pipe)
        if w is None:
            continue
        root, links = w
        if x.num_uses != 1 or root in found.chains or any(u.op is not links[-1] for u in root.uses):
            continue
        lead = math.prod(x.type.shape[:-2])
        n, f = x.type.shape[-2:]
        if _rows_major(root, links, lead, n, f, rows_rank):
            found.chains[root] = (idx, links)
    chained = {op for _, links in found.chains.values() for op in links}
    if not found.chains or not set(ops) <= chained | _other_chains(att, pipe):
        return None
    return found


def _other_chains(att, pipe: RowPipeline) -> set:
    """The view ops between the pipeline and the attention's operands that are not kept."""
    out = set()
    for x in att.operands:
        while isinstance(x.defining_op, _LINKS) and pipe.root(x) not in pipe.produced:
            out.add(x.defining_op)
            x = x.defining_op.operand(0)
    return out


def _buffer_shape(pipe: RowPipeline, root: Value, p: int) -> tuple[int, ...]:
    """``[p, row tiles, free...]``: the root's free dims as its row tile holds them."""
    rows_rank = len(pipe.members[0].rows)
    free = pipe.split.get(root) or tuple(root.type.shape[rows_rank:])
    return (p, -(-root.type.shape[rows_rank - 1] // p)) + tuple(free)


def emit_front_keep(ctx, pipe: RowPipeline, kf: KeptFront, outputs: set, row_local) -> bool:
    """Emit ``pipe`` keeping the roots of ``kf`` that fit on chip (module docstring); False (and
    nothing emitted) when none fits."""
    p = ctx.partitions
    block = ctx.b._blocks[-1]
    before = block.last
    saved = (dict(ctx.homes), dict(ctx._views), ctx._scratch)
    inside, passed = set(pipe.inside), set(pipe.passed)
    chain_ops = {op for _, links in kf.chains.values() for op in links}
    pipe.inside = inside | chain_ops | {kf.attention}
    pipe.passed = passed | set(kf.chains)  # published row tiles, neither stored nor kept
    matmuls = _emit_members(ctx, pipe, outputs, row_local, frozenset())
    first = before.next_op if before is not None else block.first
    peak = region_peak(first) if first is not None else 0
    cands = [em for em in matmuls.values() if em.resident_bytes() is not None]
    sbuf = ctx.target.sbuf_bytes_per_partition
    room = keep_room(sbuf, peak, sum(em.resident_bytes() for em in cands))
    if first is not None:
        erase_from(block, first)
    ctx.homes, ctx._views, ctx._scratch = dict(saved[0]), dict(saved[1]), saved[2]
    kept = []
    shapes = {r: _buffer_shape(pipe, r, p) for r in kf.chains}
    for root in sorted(kf.chains, key=lambda r: (-math.prod(shapes[r]), kf.chains[r][0])):
        size = math.prod(shapes[root][1:]) * root.type.dtype.itemsize
        if size <= room:
            room -= size
            kept.append(root)
    if not kept:
        pipe.inside, pipe.passed = inside, passed
        return False
    kept.sort(key=lambda r: kf.chains[r][0])
    groups = out_groups(kf.attention, p)
    kf.groups = groups or 0
    # a partly kept root's heads are checked by measuring below, not against the margin
    partial = _partial_heads(kf, kept, shapes, groups, room + MARGIN_BYTES, EXTRA_HEADS)
    loops = pipe.members[0].loops
    mark = block.last
    while True:
        kf.partial, kf.buffers = dict(partial), {}
        pipe.inside = inside | {op for r in [*kept, *partial] for op in kf.chains[r][1]} | {kf.attention}
        pipe.passed = passed | set(kept) | set(partial)
        _alloc_buffers(ctx, kf, kept, shapes, groups)
        before = block.last
        matmuls = _emit_members(
            ctx,
            pipe,
            outputs,
            row_local,
            frozenset(),
            extra=lambda tiles: [_KeepRows(ctx, loops, tiles, kf, p)],
        )
        # again with the weights resident: the kept buffers were sized to leave room for them all
        first = before.next_op
        peak = region_peak(first)
        cands = [em for em in matmuls.values() if em.resident_bytes() is not None]
        chosen = choose_resident(cands, peak, sbuf)
        if len(chosen) == len(cands) or not partial:
            break
        erase_from(block, first)
        ctx.homes, ctx._views, ctx._scratch = dict(saved[0]), dict(saved[1]), saved[2]
        if _resident_fits(ctx, pipe, outputs, row_local, cands, matmuls, kf, loops, sbuf):
            chosen, first = cands, None  # nothing of the pipeline left emitted
            break
        # the last partly kept KV head does not fit beside every weight after all: one fewer
        erase_from(block, mark.next_op if mark is not None else block.first)
        ctx.homes, ctx._views, ctx._scratch = dict(saved[0]), dict(saved[1]), saved[2]
        last = list(partial)[-1]
        partial[last] -= 1
        if not partial[last]:
            del partial[last]
    fetch = [] if chosen else choose_prefetch(list(matmuls.values()), peak, sbuf)
    if chosen or fetch:  # one row tile: weights prefetched whole, as emit_pipeline does
        if first is not None:
            erase_from(block, first)
        ctx.homes, ctx._views, ctx._scratch = dict(saved[0]), dict(saved[1]), saved[2]
        resident = frozenset(op for op, em in matmuls.items() if em in chosen)
        fetched = frozenset(op for op, em in matmuls.items() if em in fetch)
        _emit_members(
            ctx,
            pipe,
            outputs,
            row_local,
            resident,
            fetched,
            extra=lambda tiles: [_KeepRows(ctx, loops, tiles, kf, p)],
        )
    rows = {kf.chains[r][0]: kf.buffers[r] for r in kept}
    rows |= {kf.chains[r][0]: kf.buffers[r] + [None] * (groups - n) for r, n in kf.partial.items()}
    ctx.kept_rows[kf.attention] = rows
    kf.kept = kept
    return True


def _resident_fits(ctx, pipe, outputs, row_local, cands, matmuls, kf, loops, sbuf: int) -> bool:
    """True when the pipeline, emitted with every weight of ``cands`` resident beside the kept
    buffers (allocated already), peaks within ``sbuf`` bytes per partition — measured, the tiles
    counted as the verifier counts them. The emission is erased again (and ``ctx``'s homes
    restored by the caller)."""
    block = ctx.b._blocks[-1]
    before = block.last
    saved = (dict(ctx.homes), dict(ctx._views), ctx._scratch)
    resident = frozenset(op for op, em in matmuls.items() if em in cands)
    _emit_members(
        ctx,
        pipe,
        outputs,
        row_local,
        resident,
        extra=lambda tiles: [_KeepRows(ctx, loops, tiles, kf, ctx.partitions)],
    )
    first = before.next_op if before is not None else block.first
    fits = first is not None and region_peak(first) <= sbuf
    if first is not None:
        erase_from(block, first)
    ctx.homes, ctx._views, ctx._scratch = saved
    return fits


def _alloc_buffers(ctx, kf: KeptFront, kept: list, shapes: dict, groups) -> None:
    """SBUF buffers of the kept roots (``kf.buffers``): one per root, or one per KV head — q's
    query heads when the attention writes O over them (attention_out.py), the first KV heads of
    a partly kept root."""
    p = ctx.partitions
    for root, n in kf.partial.items():
        ctx.at(f"keep {ctx.name(root)} on chip")
        shape = shapes[root]
        part = (shape[0], shape[1], shape[2] // groups) + shape[3:]
        kf.buffers[root] = [ctx.b.alloc(part, root.type.dtype, "sbuf", name="kept") for _ in range(n)]
    for root in kept:
        ctx.at(f"keep {ctx.name(root)} on chip")
        shape = shapes[root]
        if kf.chains[root][0] == 0 and groups is not None and len(shape) == 4 and shape[2] % groups == 0:
            # one tile per KV head's query heads: the attention writes O over them (attention_out.py)
            part = (p, shape[1], shape[2] // groups, shape[3])
            kf.buffers[root] = [
                ctx.b.alloc(part, root.type.dtype, "sbuf", name="kept") for _ in range(groups)
            ]
        else:
            kf.buffers[root] = ctx.b.alloc(shape, root.type.dtype, "sbuf", name="kept")


def _partial_heads(kf: KeptFront, kept: list, shapes: dict, groups, room: int, extra: int = 0) -> dict:
    """{root: KV heads kept} for k and v roots that did not fit whole: their first KV heads'
    parts while they fit the ``room`` left (bytes per partition), and ``extra`` more each. Only
    when the attention runs one straight-line block per KV head (q kept as one tile per KV head:
    attention_out.py), so each head knows statically where its K / V is."""
    out: dict = {}
    q_split = any(kf.chains[r][0] == 0 and len(shapes[r]) == 4 for r in kept)
    if groups is None or not q_split:
        return out
    for root in sorted(kf.chains, key=lambda r: kf.chains[r][0]):
        shape = shapes[root]
        if root in kept or kf.chains[root][0] == 0 or shape[2] % groups:
            continue
        part = math.prod(shape[1:]) * root.type.dtype.itemsize // groups
        n = min(groups - 1, room // part + extra)
        if n > 0:
            room -= n * part
            out[root] = n
    return out


class _KeepRows:
    """A participant of the pipeline's loop nest copying each kept root's row tile into its
    buffer (one VectorE copy per root and row tile)."""

    def __init__(self, ctx, loops, tiles: dict, kf: KeptFront, p: int):
        self.ctx, self.loops, self.tiles, self.kf, self.p = ctx, loops, tiles, kf, p

    def prepare(self) -> None:
        """HBM views ``(rows, free...)`` of the partly kept roots, where their other KV heads go."""
        self.stores = {}
        for root in self.kf.partial:
            part = self.kf.buffers[root][0].type.shape[2:]
            free = (part[0] * self.kf.groups,) + tuple(part[1:])
            shape = (math.prod(root.type.shape) // math.prod(free),) + free
            self.stores[root] = self.ctx.view(self.ctx.home_for_store(root).reshape(shape))

    def top_instance(self):
        return (0, self.p)

    def enter(self, inst, level: int, offset, extent: int):
        return (offset, extent) if self.loops[level].kind == "P" else inst

    def before(self, level: int, inst) -> None:
        if level != len(self.loops):
            return
        m0, mt = inst
        rt = Affine.of(m0)
        t = Affine(rt.const // self.p, tuple((v, c // self.p) for v, c in rt.terms))
        for root, buf in self.kf.buffers.items():
            src = self.tiles[root]
            self.ctx.at(f"keep {self.ctx.name(root)} on chip")
            for i, part in enumerate(buf if isinstance(buf, list) else [buf]):
                free = tuple(_ds(0, n) for n in part.type.shape[2:])
                heads = part.type.shape[2]
                src_free = (_ds(i * heads, heads),) + free[1:] if isinstance(buf, list) else free
                dst = Access(part, (_ds(0, mt), _ds(t, 1)) + free)
                if root in self.stores:  # partly kept: SBUF -> SBUF DMA (VectorE: 2,019.9 µs)
                    self.ctx.b.dma_copy(dst=dst, src=Access(src, (_ds(0, mt),) + src_free))
                    continue
                self.ctx.b.tensor_copy(dst=dst, src=Access(src, (_ds(0, mt),) + src_free), engine=COPY_ENGINE)
            if root in self.stores:  # the other KV heads' parts to HBM, in one DMA
                heads = part.type.shape[2]
                rest = (_ds(len(buf) * heads, (self.kf.groups - len(buf)) * heads),) + free[1:]
                self.ctx.b.dma_copy(
                    dst=Access(self.stores[root], (_ds(rt, mt),) + rest),
                    src=Access(src, (_ds(0, mt),) + rest),
                )

    def after(self, _level: int, _inst) -> None:
        return None
