"""Row pipelines: consecutive lowering items that iterate the same rows share one loop nest,
and the values they pass each other row by row stay in SBUF instead of going through HBM.

Members are matmuls (rows = the M tiles of C, batch dims outer) and fusion groups whose plan
is (I..., P, F) over their last two dims with the partition dim chunked like matmul M tiles.
A value produced by one member is *passed* to a later member when it is read row-aligned: as
a whole-domain operand of a group, or as the A operand of a matmul (transposed on the Tensor
engine). ``tensor.layout_convert`` of a passed value is an alias: the conversion is exactly
those transposes. Values also used outside the pipeline are stored as usual.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.op import Op
from ...ir.value import Value
from ...tensor import ops as T
from .group_emit import GroupEmitter
from .groups import FusionGroup
from .instance import LoopSpec, loops_of
from .loopnest import Shifted, loop_signature, run_loop_nest
from .matmul import lower_matmul
from .matmul_bias import match_bias, without
from .matmul_prefetch import choose_prefetch
from .matmul_rows import merged_rows
from .pipeline_skew import read_order, run_skewed, skew_applies
from .pipeline_views import ConcatStore, ViewAlias, concat_parts, view_alias
from .plan import GroupPlan
from .resident import choose_resident, erase_from, region_peak


@dataclass
class Member:
    item: FusionGroup | T.MatmulOp
    loops: list[LoopSpec]
    rows: tuple[int, ...]
    plan: GroupPlan | None = None
    sbuf_bytes: int = 0
    row_tile_bytes: int = 0  # bytes per partition of the row tiles it computes (results)

    @property
    def ops(self) -> list[Op]:
        return self.item.ops if isinstance(self.item, FusionGroup) else [self.item]

    def key(self) -> tuple:
        return (self.rows, loop_signature(self.loops))


def group_member(g: FusionGroup, plan: GroupPlan, row_local, row_bytes: int) -> Member | None:
    """A fusion group can join a pipeline when it is (I..., P, F) over its last two dims, or
    (I..., P, F, F...) over its trailing dims (heads of a row: it then joins only a pipeline it
    reads from, through a head split or a free slice, pipeline_views.py)."""
    r = len(plan.domain)
    if r < 2 or plan.f_chunk is not None or not plan.p_dims:
        return None
    k = plan.p_dims[0]
    if plan.p_dims != (k,) or plan.f_dims != tuple(range(k + 1, r)) or not plan.f_dims:
        return None
    if tuple(plan.i_dims) != tuple(range(k)):
        return None
    if any(isinstance(op, T.ReduceOp) and not row_local(op) for op in g.ops):
        return None
    width = 1
    for d in plan.f_dims:
        width *= plan.domain[d]
    results = sum(op.result.type.dtype.itemsize for op in g.ops if op.result.type.shape == plan.domain)
    return Member(g, loops_of(plan), plan.domain[: k + 1], plan, row_bytes * width, results * width)


def _sbuf_estimate(members: list[Member]) -> int:
    """SBUF bytes per partition the members are estimated to need together: the sum of their
    working sets, or — when one reads heads through on-chip views (several free dims), whose
    chain of per-head norms and RoPE runs member after member — their row tiles (the values
    one leaves for the next) plus the largest working set."""
    if all(m.plan is None or len(m.plan.f_dims) == 1 for m in members):
        return sum(m.sbuf_bytes for m in members)
    return sum(m.row_tile_bytes for m in members) + max(m.sbuf_bytes for m in members)


def matmul_member(op: T.MatmulOp, partitions: int, homes: dict) -> Member | None:
    """A matmul with 2-D+ operands whose C row fits on chip can join a pipeline."""
    a, b = op.operands
    c = op.result
    if a.type.rank < 2 or b.type.rank < 2:
        return None
    h = homes.get(c)
    if h is not None and h.reshape(c.type.shape) is None:
        return None
    m, n = c.type.shape[-2:]
    k = a.type.shape[-1]
    batch = c.type.shape[:-2]
    loops = [LoopSpec("I", d, 1, e, 0) for d, e in enumerate(batch) if e > 1]
    if m > partitions:
        loops.append(LoopSpec("P", len(batch), partitions, m // partitions, m % partitions))
    nk = -(-k // partitions)
    sbuf = n * c.type.dtype.itemsize + nk * min(m, partitions) * 4 + min(n, 2048) * 4
    return Member(op, loops, c.type.shape[:-1], None, sbuf, n * c.type.dtype.itemsize)


@dataclass
class RowPipeline:
    """Members being collected, the values they produce, the ones passed, and aliases."""

    members: list[Member] = field(default_factory=list)
    produced: set = field(default_factory=set)
    passed: set = field(default_factory=set)
    alias: dict = field(default_factory=dict)  # layout_convert result -> the value it aliases
    views: dict = field(default_factory=dict)  # on-chip view (pipeline_views.py) -> its ViewAlias
    view_ops: list = field(default_factory=list)  # their ops, lowered as HBM views afterwards
    split: dict = field(default_factory=dict)  # matmul result -> free shape of its row tile
    concats: dict = field(default_factory=dict)  # concat result assembled on chip -> its op
    into: dict = field(default_factory=dict)  # part of such a concat -> (concat, free offsets)
    inside: set = field(default_factory=set)  # ops outside the members whose reads stay on chip

    def root(self, v: Value) -> Value:
        return self.alias.get(v, v)

    def try_view(self, op: Op, fmax: int) -> bool:
        """Record ``op`` (a reshape or slice of a pipeline value) as an on-chip view when
        pipeline_views.py allows it and its root's tile can take the shape it needs (a head
        split's inner dim divides a PSUM bank's ``fmax`` columns)."""
        if not self.members:
            return False
        src = op.operand(0)
        root = self.root(src)
        if root not in self.produced:
            return False
        va = view_alias(op, self.root, len(self.members[0].rows))
        if va is None:
            return False
        producer = root.defining_op
        if va.split is not None:
            if not isinstance(producer, T.MatmulOp) or fmax % va.split[-1]:
                return False
            if root in self.split and self.split[root] != va.split:
                return False
            if root in self.passed and root not in self.split:
                return False  # already read as a 2-D row tile
            self.split[root] = va.split
        else:
            if src in self.views:
                base = self.views[src]
                if len(base.offsets) != len(va.offsets):
                    return False
                va = ViewAlias(va.value, root, None, tuple(a + b for a, b in zip(base.offsets, va.offsets)))
            free = self.split.get(root)
            rank = len(free) if free is not None else root.type.rank - len(self.members[0].rows)
            if rank != len(va.offsets):
                return False
        self.alias[va.value] = root
        self.views[va.value] = va
        self.view_ops.append(op)
        return True

    def reads_pipeline(self, op: Op) -> bool:
        return any(self.root(u) in self.produced for u in op.operands)

    def try_concat(self, op: Op) -> bool:
        """Assemble the concat ``op`` in a row tile when the last member computes all its parts
        (pipeline_views.concat_parts); later members read that tile, and it is stored once per
        row tile when it is used outside the pipeline."""
        if not self.members or not isinstance(self.members[-1].item, FusionGroup):
            return False
        m = self.members[-1]
        parts = concat_parts(op, m.item, m.plan, len(m.rows))
        if parts is None or any(u in self.into for u in parts):
            return False
        self.concats[op.result] = op
        self.produced.add(op.result)  # later members read it on chip
        for u, offs in parts.items():
            self.into[u] = (op.result, offs)
        return True

    def try_join(self, m: Member, budget: int) -> bool:
        """Add ``m`` if it shares the loops and reads pipeline values only row-aligned."""
        if self.members and m.key() != self.members[0].key():
            return False
        if _sbuf_estimate(self.members + [m]) > budget:
            return False
        passed = set()
        if isinstance(m.item, FusionGroup):
            members = set(m.item.ops)
            for op in m.item.ops:
                for u in op.operands:
                    r = self.root(u)
                    if r in self.produced and u.defining_op not in members:
                        if u.type.shape != m.plan.domain:
                            return False
                        if r in self.split and u not in self.views:
                            return False  # a head-split row tile is read through its view only
                        passed.add(r)
            if len(m.plan.f_dims) > 1 and not passed:
                return False  # several free dims: only to read a pipeline value on chip
        else:
            a, b = m.item.operands
            if self.root(b) in self.produced:
                return False
            if self.root(a) in self.produced:
                if self.root(a) in self.split or a in self.views or self.root(a) in self.concats:
                    return False  # A is read as a 2-D row tile
                if a.type.shape != m.item.result.type.shape[:-1] + (a.type.shape[-1],):
                    return False
                passed.add(self.root(a))
        self.members.append(m)
        self.passed |= passed
        self.produced |= {op.result for op in m.ops}
        return True

    def all_ops(self) -> set[Op]:
        ops = {op for m in self.members for op in m.ops}
        ops |= {v.defining_op for v in self.alias}
        ops |= set(self.concats.values())
        return ops | self.inside

    def escapes(self, v: Value, outputs: set) -> bool:
        """True when ``v`` (or an alias of it) is used outside the pipeline or returned."""
        inside = self.all_ops()
        values = [v] + [a for a, r in self.alias.items() if r is v]
        return any(x in outputs or any(u.op not in inside for u in x.uses) for x in values)


def emit_pipeline(ctx, pipe: RowPipeline, outputs: set, row_local, extra=None, rows=None) -> None:
    """Emit the members in one shared loop nest (see module docstring), with the weights that
    fit SBUF resident (resident.py: emitted once streaming them, measured, emitted again).
    ``extra(tiles)``: more participants after the members, reading the pipeline's tile table
    (mlp_prologue.py); ``rows`` = (loops, base): run the members over those loops only, their
    rows starting at ``base`` (a group of rows)."""
    if extra is None and rows is None and _emit_alone_biased(ctx, pipe, outputs):
        return
    block = ctx.b._blocks[-1]
    before = block.last
    saved = (dict(ctx.homes), dict(ctx._views), ctx._scratch)
    matmuls = _emit_members(ctx, pipe, outputs, row_local, frozenset(), extra=extra, rows=rows)
    first = before.next_op if before is not None else block.first
    cands = [em for em in matmuls.values() if em.resident_bytes() is not None]
    if first is None:
        return
    sbuf = ctx.target.sbuf_bytes_per_partition
    chosen = choose_resident(cands, region_peak(first), sbuf) if cands else []
    if not chosen:  # one row instance: prefetch weights instead (matmul_prefetch.py)
        fetch = choose_prefetch(list(matmuls.values()), region_peak(first), sbuf)
        if not fetch:
            return
        erase_from(block, first)
        ctx.homes, ctx._views, ctx._scratch = dict(saved[0]), dict(saved[1]), saved[2]
        fetched = frozenset(op for op, em in matmuls.items() if em in fetch)
        _emit_members(ctx, pipe, outputs, row_local, frozenset(), fetched, extra=extra, rows=rows)
        return
    erase_from(block, first)
    ctx.homes, ctx._views, ctx._scratch = dict(saved[0]), dict(saved[1]), saved[2]
    resident = frozenset(op for op, em in matmuls.items() if em in chosen)
    _emit_members(ctx, pipe, outputs, row_local, resident, extra=extra, rows=rows)


def _emit_members(
    ctx,
    pipe: RowPipeline,
    outputs: set,
    row_local,
    resident: frozenset,
    prefetch: frozenset = frozenset(),
    extra=None,
    rows=None,
) -> dict:
    """Emit the shared loop nest once; ``resident``: matmul ops whose B is loaded once,
    ``prefetch``: those whose B is prefetched whole. Returns {matmul op: its emitter}."""
    matmuls: dict = {}
    tiles: dict = {}
    participants = []
    epilogues = bias_epilogues(ctx, pipe, outputs)
    fused = {e.add for e in epilogues.values()}
    for m in pipe.members:
        if isinstance(m.item, FusionGroup):
            g = without(m.item, fused)
            if g is None:  # only bias adds, computed by the matmuls' evacuations
                continue
            members = set(g.ops)
            escaping = [
                op.result
                for op in g.ops
                if op.result not in pipe.into
                and (
                    pipe.escapes(op.result, outputs)
                    or any(
                        u.op not in members and pipe.root(op.result) not in pipe.passed
                        for u in op.result.uses
                    )
                )
            ]
            provided = {
                u
                for op in g.ops
                for u in op.operands
                if u.defining_op not in members and pipe.root(u) in pipe.passed
            }
            publish = {op.result for op in g.ops if op.result in pipe.passed}
            em = GroupEmitter(
                ctx,
                g,
                escaping,
                m.plan,
                row_local,
                pipe=_AliasedTiles(tiles, pipe),
                provided=provided,
                publish=publish,
            )
            em.into = {u: pipe.into[u] for u in (op.result for op in g.ops) if u in pipe.into}
            participants.append(em)
        else:
            op = m.item
            a = op.operand(0)
            kept = ctx.kept_out.get(a)  # A held on chip for every row (attention_out.py)
            if kept is not None:
                tiles[a] = kept
            epi = epilogues.get(op)
            c = op.result if epi is None else epi.result
            em = lower_matmul(
                ctx,
                op,
                pipe=tiles,
                a_provided=pipe.root(a) in pipe.passed or kept is not None,
                publish=c in pipe.passed,
                store=pipe.escapes(c, outputs),
                run=False,
                epilogue=epi,
            )
            if pipe.root(a) in pipe.passed or kept is not None:
                em.a_value = pipe.root(a)
            em.row_split = pipe.split.get(op.result)
            em.resident = op in resident
            em.prefetch = op in prefetch
            matmuls[op] = em
            participants.append(em)
    loops = pipe.members[0].loops
    participants += [
        ConcatStore(ctx, cat, loops, tiles) for cat in pipe.concats if pipe.escapes(cat, outputs)
    ]
    if rows is not None:  # one group of rows (mlp_block.py's row groups)
        loops = rows[0]
        participants = [Shifted(p, rows[1]) for p in participants]
    if extra is not None:
        participants += extra(tiles)
    if pipe.views and rows is None and skew_applies(loops, participants):  # the layer's front
        run_skewed(ctx.b, loops, read_order(participants, pipe.root), tiles)
    else:
        run_loop_nest(ctx.b, loops, participants)
    for alias, root in pipe.alias.items():
        if root in ctx.homes and alias not in ctx.homes and alias not in pipe.views:
            ctx.homes[alias] = ctx.homes[root]
    return matmuls


def bias_epilogues(ctx, pipe: RowPipeline, outputs: set) -> dict:
    """{matmul op: BiasEpilogue} for the pipeline's matmuls whose C only feeds a bias add in a
    fusion group of the pipeline (matmul_bias.py). The add's result is then the matmul's:
    passed on chip when a member reads it."""
    groups = {op for m in pipe.members if isinstance(m.item, FusionGroup) for op in m.item.ops}
    found = {}
    for m in pipe.members:
        op = m.item
        if isinstance(op, FusionGroup) or op.result in pipe.split or op.result in pipe.into:
            continue
        if any(r is op.result for r in pipe.alias.values()):
            continue
        epi = match_bias(ctx, op, outputs)
        if epi is None or epi.add not in groups or pipe.root(epi.bias) in pipe.produced:
            continue
        found[op] = epi
        inside = pipe.all_ops() - {epi.add}
        if any(u.op in inside for u in epi.result.uses):
            pipe.passed.add(epi.result)
    return found


def _emit_alone_biased(ctx, pipe: RowPipeline, outputs: set) -> bool:
    """A pipeline of one matmul without batch dims and the group adding its bias and nothing
    else: the matmul alone (its own loop order, matmul.py: B resident, lead M tiles) with the
    bias epilogue. True when it applied. (With batch dims only when they merge with A's rows,
    one matmul for all instances, matmul_rows.py; otherwise the standalone matmul would read a
    broadcast B once per batch instance, and the row pipeline keeps it resident.)"""
    if len(pipe.members) != 2 or pipe.views or pipe.concats or pipe.inside or pipe.alias:
        return False
    mm, g = (m.item for m in pipe.members)
    if not isinstance(mm, T.MatmulOp) or not isinstance(g, FusionGroup) or len(g.ops) != 1:
        return False
    if mm.operand(0) in ctx.kept_out:
        return False
    epi = match_bias(ctx, mm, outputs)
    if epi is None or epi.add is not g.ops[0]:
        return False
    if any(e > 1 for e in mm.result.type.shape[:-2]) and not _rows_merge(ctx, mm, epi.result):
        return False
    lower_matmul(ctx, mm, epilogue=epi)
    return True


def _rows_merge(ctx, mm: T.MatmulOp, c) -> bool:
    """True when the batched matmul ``mm`` (result stored as ``c``) runs as one matmul over
    A's batch dims merged with its rows (matmul_rows.py)."""
    a, b = mm.operands
    if a.type.rank < 3:
        return False
    batch, (m, k), n = a.type.shape[:-2], a.type.shape[-2:], c.type.shape[-1]
    hc = ctx.home_for_store(c).reshape(batch + (m, n))
    return merged_rows(batch, b.type.rank, ctx.home(a), hc, m, k, n) is not None and hc is not None


class _AliasedTiles(dict):
    """The pipeline's tile table seen through layout_convert aliases."""

    def __init__(self, tiles: dict, pipe: RowPipeline):
        super().__init__()
        self._tiles, self._pipe = tiles, pipe

    def _key(self, v):
        return v if isinstance(v, tuple) else self._pipe.root(v)

    def __getitem__(self, v):
        return self._tiles[self._key(v)]

    def __setitem__(self, v, t):
        self._tiles[self._key(v)] = t

    def __contains__(self, v):
        return self._key(v) in self._tiles

    def offsets(self, v) -> tuple[int, ...] | None:
        """Free-dim offsets at which a free-slice view reads its root's tile (None: from 0)."""
        va = self._pipe.views.get(v)
        return va.offsets if va is not None and va.split is None else None
