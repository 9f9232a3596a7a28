"""Lower a tensor graph (after canonicalize / decompose / layout) to an NKI kernel graph.

Walks the fusion partition in dependency order: fusion groups become loop nests, matmuls
their own tiled loops, view ops (reshape / transpose / broadcast_to / slice) new HBM views,
concat operands are stored straight into their slice of the result when possible, dense
constants become extra kernel inputs, and outputs that are not already computed into their
own HBM allocation are copied there.
"""

from __future__ import annotations

import numpy as np

from ...ir.errors import BuildError
from ...ir.graph import Graph, ReturnOp
from ...ir.op import Op
from ...ir.printer import Printer
from ...ir.value import Value
from ...nki.builder import Builder as NkiBuilder
from ...nki.ops import AllocOp
from ...nki.ops.collective import COLLECTIVE_OPS
from ...nki.target import TRN2, Target
from ...tensor import ops as T
from . import (
    argmin,  # noqa: F401  (registers tensor.argmin's native lowering)
    causal_attention_dispatch,  # noqa: F401  (registers tensor.causal_attention's lowering)
    collective,  # noqa: F401  (registers the collectives' item rule)
    cumsum,  # noqa: F401  (registers tensor.cumsum's on-chip lowering)
    custom,  # noqa: F401  (registers the custom-kernel rule)
    decode_attention,  # noqa: F401  (registers tensor.decode_attention's lowering)
    flash_attention,  # noqa: F401  (registers tensor.flash_attention's lowering)
    gathered_matmul,  # noqa: F401  (registers tensor.gathered_matmul's lowering)
    grouped_pairs,  # noqa: F401  (registers tensor.grouped_attention's lowering)
    indexed,  # noqa: F401  (registers the gather / scatter item rules)
    sink_attention,  # noqa: F401  (registers tensor.sink_attention's lowering)
    topk,  # noqa: F401  (registers the native topk item rule)
)
from .affine_constants import build_affine_constants
from .capacity import check_hbm_capacity
from .column_moments import ColumnMoments, emit_column_moments, find_column_moments
from .column_softmax import ColumnSoftmax, emit_column_softmax, find_column_softmaxes
from .column_sums import ColumnSums, emit_column_sums, find_column_sums
from .context import LowerContext
from .empty import fold_empty
from .front_keep import emit_front_keep, match_front_keep
from .group_emit import GroupEmitter
from .groups import FusionGroup, form_groups, is_fusible
from .homes import HbmHome
from .index_chain import hoist_index_chain
from .inplace import finish_aliased_outputs, place_aliased_outputs
from .interleaved_concat import plan_interleaved_concats
from .item_order import hoist_projections
from .kept_axis_sums import KeptAxisSum, emit_kept_axis_sum, find_kept_axis_sums
from .limits import LoweringLimit
from .liveness import peak_live_bytes
from .long_rows import min_row, split_long_rows
from .matmul import lower_matmul
from .mlp_block import emit_widest, match_mlp_block, plan_block
from .mlp_prologue import match_prologue
from .onchip_rows import drop_unread_scratch
from .online import reads_running_max
from .operand_cast import is_operand_cast
from .output_views import place_reshaped_outputs
from .pipeline import RowPipeline, emit_pipeline, group_member, matmul_member
from .pipeline_views import concat_in_place
from .plan import RowTooWide, fold_rows, is_row_local, make_plan
from .remat import rematerialize
from .row_blocks import RowBlocks, emit_row_blocks, find_row_blocks
from .row_sequence import emit_row_pair, find_row_pairs
from .row_split import emit_row_split, find_row_splits
from .rules import ITEM_RULES, item_rule, rule_for
from .scatter_first import scatter_first
from .scratch_order import scratch_order
from .spread_reduce import SpreadReduce, emit_spread_reduce, find_spread_reduces
from .view_chains import place_view_chains
from .views import VIEW_OPS, copy_home, is_layout_convert, plan_concats


def lower_to_nki(graph: Graph, target: Target = TRN2, layout=None, lnc: int = 1):
    """Lower ``graph`` (modified in place by empty-tensor folding) to an NKI kernel (to be split
    over ``lnc`` physical cores: ``LowerContext.lnc``).

    Returns (kernel graph, constant arrays the kernel takes as extra inputs, graph outputs that
    are empty and so are not kernel outputs: name -> TensorType).
    """
    check_hbm_capacity(graph, target)
    empty = fold_empty(graph)
    build_affine_constants(graph)  # iota ops instead of HBM constant inputs (affine_constants.py)
    alone: set = set()
    while True:
        try:
            kernel, constants = _lower(graph, target, layout, alone, empty, lnc)
            return kernel, constants, empty
        except LoweringLimit as e:  # last resort: that op alone, through HBM (limits.py)
            if e.op is None or e.op in alone:
                raise
            alone.add(e.op)


def _lower(graph: Graph, target: Target, layout, alone: set, empty: dict, lnc: int = 1):
    """One lowering attempt with the ops of ``alone`` in fusion groups of their own."""
    free_limit = (target.sbuf_bytes_per_partition * 3 // 4) // 16
    b = NkiBuilder(graph.name)

    def roles_of(v: Value):
        return layout.roles.get(v) if layout is not None else None

    ctx = LowerContext(target, b, roles_of, Printer(graph))
    ctx.scratch_order = lambda v: scratch_order(v, roles_of(v))
    ctx.lnc = lnc
    if layout is not None:
        ctx.tile_knobs = dict(layout.tile_knobs)
    ctx.alone, ctx.spilled = alone, _spilled_values(alone)
    part, plans, row_local, pairs, splits = _partition_and_plan(ctx, graph, free_limit)
    ctx.printer = Printer(graph)  # rematerialization may have added ops
    for name, v in zip(graph.input_names, graph.inputs):
        if any(d == 0 for d in v.type.shape):
            if all(isinstance(u.op, ReturnOp) for u in v.uses):
                continue  # read by nothing the kernel computes: not a kernel input
            raise BuildError(
                f"input {name!r} has an empty dimension {v.type.shape}; NKI tensors need positive dimensions"
            )
        ctx.homes[v] = HbmHome.whole(b.add_input(name, v.type.shape, v.type.dtype))
    ctx.reserved_names = set(graph.input_names) | set(graph.outputs)
    add_constant_inputs(ctx, graph)
    producers = _produced_in_kernel(graph, part)
    outputs = {n: v for n, v in graph.outputs.items() if n not in empty}
    aliases = place_aliased_outputs(ctx, graph, outputs, producers)
    place_reshaped_outputs(ctx, outputs, producers, skip=aliases)
    for name, v in outputs.items():
        if v in producers and v not in ctx.homes:
            ctx.at(f"output {name}")
            ctx.homes[v] = ctx.alloc_hbm(v.type.shape, v.type.dtype, name=name)
    _place_reshaped_outputs(ctx, outputs, producers)
    place_view_chains(ctx, graph, producers, outputs)
    plan_concats(ctx, graph, producers, set(outputs.values()))
    plan_interleaved_concats(ctx, graph, producers, set(outputs.values()), part, plans)
    _lower_items(ctx, part, plans, row_local, set(outputs.values()), pairs, splits)
    check_tile_knobs_applied(ctx)
    final = {}
    claimed = {id(ctx.homes[i].base) for i in graph.inputs if i in ctx.homes}
    for name in (n for n in outputs if n not in aliases):  # aliased ones last (after all reads)
        v = outputs[name]
        h = ctx.home(v)
        if (
            h.is_whole_base
            and id(h.base) not in claimed
            and (h.base.name_hint == name or _own_scratch(h.base))
        ):
            h.base.name_hint = name  # a scratch copy made for this value alone (np.repeat's)
            final[name] = h.base
            claimed.add(id(h.base))
            continue
        ctx.at(f"output {name}")
        out = ctx.alloc_hbm(v.type.shape, v.type.dtype, name=name)
        copy_home(ctx, h, out)
        final[name] = out.base
        claimed.add(id(out.base))
    final.update(finish_aliased_outputs(ctx, graph, outputs, aliases))
    b.set_outputs({n: final[n] for n in outputs}, aliases)
    b.graph.dce()  # views a lowering family prepared but did not use
    drop_unread_scratch(b.graph)  # values read back from SBUF instead (onchip_rows.py)
    return b.graph, ctx.constants


def _own_scratch(base: Value) -> bool:
    """An HBM scratch buffer the lowering allocated (not a kernel input, spill or constant) that
    no collective touches: collectives read and write private HBM only, never a kernel output."""
    return (
        isinstance(base.defining_op, AllocOp)
        and (base.name_hint or "").startswith("scratch")
        and not any(isinstance(u, COLLECTIVE_OPS) for u in base.users)
    )


def _place_reshaped_outputs(ctx: LowerContext, outputs: dict, producers: set) -> None:
    """An output that is a reshape of a value the kernel computes (a reduction's keepdims
    result reshaped to drop the reduced dims) gets its buffer first and the computed value is
    stored straight into it (a reshaped view), instead of into a scratch buffer copied to the
    output by an HBM -> HBM DMA."""
    for name, v in outputs.items():
        op = v.defining_op
        if v in ctx.homes or not isinstance(op, T.ReshapeOp):
            continue
        src = op.operand(0)
        if src not in producers or src in ctx.homes or src in ctx.spilled:
            continue
        ctx.at(f"output {name}")
        ctx.homes[src] = ctx.alloc_hbm(v.type.shape, v.type.dtype, name=name).reshape(src.type.shape)


def _spilled_values(alone: set) -> set[Value]:
    """Values that go through HBM because an op was lowered alone: its result and operands."""
    out: set[Value] = set()
    for op in alone:
        out.add(op.result)
        out.update(u for u in op.operands if u.defining_op is not None and is_fusible(u.defining_op))
    return out


def add_constant_inputs(ctx: LowerContext, graph: Graph) -> None:
    """Dense constants of ``graph``'s top block become extra kernel inputs ``const0``, ...
    (named clear of ``ctx.reserved_names``)."""
    used = ctx.reserved_names
    k = 0
    for op in graph.body:
        if isinstance(op, T.ConstantOp):
            while f"const{k}" in used or f"const{k}" in ctx.constants:
                k += 1
            name = f"const{k}"
            used.add(name)
            ctx.constants[name] = np.array(op.attrs["value"].array)
            t = op.result.type
            ctx.homes[op.result] = HbmHome.whole(ctx.b.add_input(name, t.shape, t.dtype))


def _produced_in_kernel(graph: Graph, part) -> set[Value]:
    """Values computed by the kernel into HBM storage of their own (not views, inputs, consts)."""
    out = set()
    for op in graph.body:
        if isinstance(op, T.ForLoopOp):
            out.update(op.results)
        elif isinstance(op, (T.MatmulOp, T.ConcatOp, T.GatherRowsOp, T.ScatterRowsOp)) or op in part.group_of:
            out.add(op.result)
        elif isinstance(op, (T.FullOp, T.TopkOp)):
            out.update(op.results)
        elif isinstance(op, T.CompositeOp) and custom.has_own_lowering(type(op)) and len(op.results) == 1:
            out.add(op.result)  # a registered kernel writes its output alloc (custom.inline_body)
    return out


def _partition_and_plan(ctx: LowerContext, graph: Graph, free_limit: int):
    """Fusion groups and their plans. A group whose row-local reductions need rows wider than
    SBUF is formed again with those reductions accumulating over free-dim chunks (they then end
    their group, and what reads them runs in a group of its own)."""
    demoted: set = set()
    budget = (ctx.target.sbuf_bytes_per_partition * 3) // 4
    splits = find_row_splits(graph, ctx.partitions, budget)  # each op alone until emitted
    splits += find_row_blocks(graph, ctx.partitions, budget, {op for rs in splits for op in rs.ops})
    splits += find_column_softmaxes(graph, budget, {op for rs in splits for op in rs.ops})
    splits += find_column_moments(graph, budget, {op for rs in splits for op in rs.ops})
    taken = {op for rs in splits for op in rs.ops}
    splits += find_column_sums(graph, budget, ctx.target.psum_bank_fmax, taken)  # middle axes
    splits += find_spread_reduces(graph, ctx.partitions)  # sums of inputs over all partitions
    splits += find_kept_axis_sums(graph, budget, {op for rs in splits for op in rs.ops})  # x.sum((0, 2))
    claimed = {op for rs in splits for op in rs.ops}
    recomputed: set = {op.result for op in claimed}

    def row_local(op) -> bool:
        return op not in demoted and is_row_local(op, free_limit)

    def accumulating(op) -> bool:
        return isinstance(op, T.ReduceOp) and not row_local(op)

    def planner(g: FusionGroup, budget: int):
        return _plan_group(ctx, g, row_local, peak_live_bytes(g, part.escaping(g)), part.escaping(g), budget)

    while True:
        part = form_groups(
            graph,
            is_barrier=accumulating,
            reads_barrier=lambda d, op: reads_running_max(d, op, accumulating),
            alone=ctx.alone | claimed,
        )
        plans = {}
        try:
            for item in part.items:
                if isinstance(item, FusionGroup):
                    row_bytes = peak_live_bytes(item, part.escaping(item))
                    plan = _plan_group(ctx, item, row_local, row_bytes, part.escaping(item))
                    plans[item] = (plan, row_bytes)
        except RowTooWide as e:
            more = {op for op in e.group.ops if isinstance(op, T.ReduceOp) and row_local(op)}
            if not more:
                raise
            demoted |= more
            continue
        pairs = find_row_pairs(part, plans, row_local, planner, budget)
        pairs = {g: p for g, p in pairs.items() if not claimed & {*p.first.ops, *p.second.ops}}
        for pair in pairs.values():  # passed on chip: not worth recomputing
            recomputed.update(pair.passed)
        if rematerialize(graph, part, recomputed):
            continue
        return part, plans, row_local, pairs, splits


def _lower_items(ctx: LowerContext, part, plans, row_local, outputs: set, pairs: dict, splits=()) -> None:
    """Emit the partition's items in order, fusing runs of row-compatible matmuls and fusion
    groups into row pipelines (pipeline.py) and pairs of groups into row sequences
    (row_sequence.py)."""
    budget = (ctx.target.sbuf_bytes_per_partition * 3) // 4
    pipe = RowPipeline()

    def flush() -> None:
        nonlocal pipe
        _emit_collected(ctx, pipe, part, row_local, outputs)
        pipe = RowPipeline()

    def take() -> RowPipeline:
        """The collected pipeline, not emitted (the MLP block may run it as its prologue)."""
        nonlocal pipe
        taken, pipe = pipe, RowPipeline()
        return taken

    seconds = {id(p.second) for p in pairs.values()}  # emitted with their pair's first group
    claimed = {op: rs for rs in splits for op in rs.ops}
    done: set = set()
    items = [it for it in part.items if id(it) not in seconds]
    items = hoist_projections(items, _emits_nothing_dependent)
    items = hoist_index_chain(items, _emits_nothing_dependent)
    items = scatter_first(items, _emits_nothing_dependent)
    skip: set = set()
    for i, item in enumerate(items):
        if _try_mlp_block(ctx, items, i, plans, row_local, outputs, skip, take, part):
            continue
        member = None
        rs = claimed.get(item.ops[0]) if isinstance(item, FusionGroup) else None
        if rs is not None:  # few long rows spread over the partitions (row_split.py)
            _emit_row_split(ctx, rs, part, plans, row_local, done, flush)
            continue
        if isinstance(item, (FusionGroup, T.MatmulOp)):
            member, plan = _pipeline_member(ctx, item, plans, row_local, budget, part, pipe)
            if member is None:
                flush()
                _emit_alone(ctx, item, plan, part, row_local, pairs.get(item), outputs)
                continue
        if member is not None:
            if not pipe.try_join(member, budget):
                flush()
                if not pipe.try_join(member, budget):  # a group of heads reading nothing on chip
                    _emit_alone(ctx, item, plan, part, row_local, pairs.get(item), outputs)
            continue
        if _absorbed_on_chip(ctx, pipe, item):
            continue
        if not _lowers_beside(ctx, pipe, item):
            if _try_front_keep(ctx, pipe, items, i, outputs, row_local, skip):
                pipe = RowPipeline()
                if id(item) in skip:
                    continue
            else:
                flush()
        _lower_op(ctx, item)
        skip |= kept_views(ctx)
    flush()


def reads_kept(ctx: LowerContext, item) -> bool:
    """A matmul whose A is held on chip (attention_out.py): emitted as a row pipeline, which
    reads it there, even alone."""
    return isinstance(item, T.MatmulOp) and item.operand(0) in ctx.kept_out


def kept_views(ctx: LowerContext) -> set:
    """Ids of the view ops between an attention output kept on chip and its reader
    (attention_out.py): they emit nothing."""
    return {id(op) for kept in ctx.kept_out.values() for op in kept.links}


def _absorbed_on_chip(ctx: LowerContext, pipe: RowPipeline, item) -> bool:
    """True when ``item`` becomes part of the collected pipeline without code of its own: a
    layout change or view of a pipeline value, or a concat assembled in a row tile and stored
    once (pipeline_views.py)."""
    if is_layout_convert(item) and pipe.root(item.operand(0)) in pipe.produced:
        pipe.alias[item.result] = pipe.root(item.operand(0))
        return True
    if isinstance(item, (T.ReshapeOp, T.SliceOp)):
        return pipe.try_view(item, ctx.target.psum_bank_fmax)
    return isinstance(item, T.ConcatOp) and pipe.try_concat(item)


def _lowers_beside(ctx: LowerContext, pipe: RowPipeline, item) -> bool:
    """True when ``item`` may be lowered without first emitting the collected pipeline: a concat
    whose parts are stored into their slices, or an op that reads nothing of the pipeline and
    emits nothing later items depend on."""
    if isinstance(item, T.ConcatOp) and concat_in_place(ctx, item):
        return True
    return not pipe.reads_pipeline(item) and _emits_nothing_dependent(item)


def _emit_collected(ctx: LowerContext, pipe: RowPipeline, part, row_local, outputs: set) -> None:
    """Emit a collected row pipeline (one member: on its own); aliases take their root's home."""
    alone = len(pipe.members) == 1 and not reads_kept(ctx, pipe.members[0].item)
    if alone:
        m = pipe.members[0]
        if isinstance(m.item, FusionGroup):
            _emit_group(ctx, m.item, m.plan, part, row_local)
        else:
            lower_matmul(ctx, m.item)
    elif pipe.members:
        emit_pipeline(ctx, pipe, outputs, row_local)
    _finish_collected(ctx, pipe)


def _try_front_keep(
    ctx: LowerContext, pipe: RowPipeline, items, i: int, outputs: set, row_local, skip: set
) -> bool:
    """Emit the collected pipeline keeping q / k / v on chip for the causal attention reading
    them through the view chains starting at ``items[i]`` (front_keep.py); True when it did (the
    kept values' chain ops are then added to ``skip``)."""
    kf = match_front_keep(pipe, items, i)
    if kf is None or not emit_front_keep(ctx, pipe, kf, outputs, row_local):
        return False
    _finish_collected(ctx, pipe)
    skip |= {id(op) for r in kf.kept for op in kf.chains[r][1]}
    return True


def _finish_collected(ctx: LowerContext, pipe: RowPipeline) -> None:
    """After a pipeline is emitted: aliases take their root's home, on-chip views whose root was
    stored become HBM views as well."""
    for alias, root in pipe.alias.items():
        if root in ctx.homes and alias not in ctx.homes and alias not in pipe.views:
            ctx.homes[alias] = ctx.homes[root]
    for op in pipe.view_ops:  # on-chip views whose root was stored: HBM views as well
        if op.operand(0) in ctx.homes:
            _lower_op(ctx, op)


def _try_mlp_block(
    ctx: LowerContext, items, i: int, plans, row_local, outputs: set, skip: set, take, part
) -> bool:
    """Emit the gated MLP starting at ``items[i]`` as one blocked loop nest (mlp_block.py) when
    it matches and fits; its items are then added to ``skip`` (True for those: emitted). The
    row pipeline collected before it (``take()``) becomes its staging loop when it computes the
    MLP's input (mlp_prologue.py), else it is emitted first."""
    if id(items[i]) in skip:
        return True
    if not isinstance(items[i], T.MatmulOp):
        return False
    blk = match_mlp_block(items, i, plans, row_local, outputs, _emits_nothing_dependent)
    if blk is None:
        return False
    pipe = take()
    blk.prologue = match_prologue(pipe, blk, ctx.partitions)
    fits = plan_block(ctx, blk, plans)
    if not fits and blk.prologue is not None and blk.prologue.kept:
        blk.prologue.kept = []  # the epilogue's operands through HBM, the MLP input on chip
        fits = plan_block(ctx, blk, plans)
    if not fits and blk.prologue is not None:
        blk.prologue = None
        fits = plan_block(ctx, blk, plans)
    if blk.prologue is None:
        _emit_collected(ctx, pipe, part, row_local, outputs)
    if not fits:
        return False
    for it in blk.prelude:
        _lower_op(ctx, it)
    emit_widest(ctx, blk, outputs, row_local, plans)
    skip |= blk.consumed
    return True


def _emit_row_split(ctx: LowerContext, rs, part, plans, row_local, done: set, flush) -> None:
    """A claimed softmax over few long rows, at its first op's item (``done``: those emitted);
    when its input or output cannot be viewed as per-partition chunks, its ops one by one (each
    a fusion group, through HBM)."""
    if id(rs) in done:
        return
    flush()
    done.add(id(rs))
    emit = {
        SpreadReduce: emit_spread_reduce,
        RowBlocks: emit_row_blocks,
        ColumnSoftmax: emit_column_softmax,
        ColumnMoments: emit_column_moments,
        ColumnSums: emit_column_sums,
        KeptAxisSum: emit_kept_axis_sum,
    }.get(type(rs), emit_row_split)
    if emit(ctx, rs):
        return
    for g in (it for it in part.items if isinstance(it, FusionGroup) and it.ops[0] in rs.ops):
        _emit_group(ctx, g, plans[g][0], part, row_local)


def _emit_alone(ctx: LowerContext, item, plan, part, row_local, pair, outputs: set) -> None:
    """A fusion group (or the row sequence it starts) or a matmul in a loop nest of its own."""
    if pair is not None:
        emit_row_pair(ctx, pair, part, outputs, row_local)
    elif isinstance(item, FusionGroup):
        _emit_group(ctx, item, plan, part, row_local)
    else:
        lower_matmul(ctx, item)


def _folded_plan(ctx: LowerContext, g: FusionGroup, plans, budget: int, part):
    """The group's plan with narrow rows folded several to a partition, or few long rows split
    over the partitions (long_rows.py), when that applies (never for groups touching a matmul,
    nor when a tile_size knob fixes the rows per tile)."""
    plan, row_bytes = plans[g]
    if _touches_matmul(g) or _tile_rows(ctx, g) != ctx.partitions:
        return plan
    folded = fold_rows(
        plan,
        g,
        row_bytes,
        partitions=ctx.partitions,
        sbuf_budget=budget,
        wide_row_bytes=ctx.target.dma_saturating_bytes_per_partition,
    )
    if folded is not plan:
        return folded
    rank = len(g.domain)
    stores = [(1,) * (rank - v.type.rank) + tuple(v.type.shape) for v in part.escaping(g)]
    loads = [(1,) * (rank - u.type.rank) + tuple(u.type.shape) for u in _group_inputs(g)]
    return split_long_rows(plan, g, ctx.partitions, loads, stores, min_row(ctx.target))


def _pipeline_member(ctx: LowerContext, item, plans, row_local, budget: int, part, pipe=None):
    """(row-pipeline member or None, plan) for a fusion group or matmul. None means the item is
    emitted on its own: a group whose narrow rows fold (with that folded plan; not when it reads
    an on-chip view of the pipeline being collected, pipeline_views.py), or a group or matmul
    that cannot join a row pipeline. A matmul's plan is None."""
    if isinstance(item, T.MatmulOp):
        return matmul_member(item, ctx.partitions, ctx.homes), None
    plan, row_bytes = plans[item]
    folded = _folded_plan(ctx, item, plans, budget, part)
    reads_view = pipe is not None and any(u in pipe.views for op in item.ops for u in op.operands)
    if folded is not plan and not reads_view:
        return None, folded
    return group_member(item, plan, row_local, row_bytes), plan


def _touches_matmul(g: FusionGroup) -> bool:
    """True when the group reads a matmul result or feeds a matmul (directly or through a
    layout conversion): it may then share a row pipeline with it."""

    def feeds(v: Value, depth: int = 0) -> bool:
        return any(
            isinstance(u.op, T.MatmulOp)
            or (depth < 4 and is_layout_convert(u.op) and feeds(u.op.result, depth + 1))
            for u in v.uses
        )

    def fed(v: Value, depth: int = 0) -> bool:
        d = v.defining_op
        return isinstance(d, T.MatmulOp) or (
            depth < 4 and d is not None and is_layout_convert(d) and fed(d.operand(0), depth + 1)
        )

    return any(fed(u) for op in g.ops for u in op.operands) or any(feeds(op.result) for op in g.ops)


def _emits_nothing_dependent(op: Op) -> bool:
    """Items that may be lowered in the middle of a pipeline being collected: views, aliases and
    constants (they only read HBM values that exist already)."""
    if isinstance(op, (T.ConstantOp,) + VIEW_OPS) or is_layout_convert(op) or is_operand_cast(op):
        return True
    if isinstance(op, T.FullOp):
        return all(_consumed_as_immediate(u.op) for u in op.result.uses)
    return False


def _plan_group(ctx: LowerContext, g: FusionGroup, row_local, row_bytes: int, escaping=(), budget=None):
    roles = None
    for op in g.ops:
        v = op.result if not isinstance(op, T.ReduceOp) else op.operand(0)
        if v.type.shape == g.domain:
            roles = ctx.roles_of(v)
            if roles is not None:
                break
    return make_plan(
        g,
        roles,
        partitions=_tile_rows(ctx, g),
        sbuf_budget=budget if budget is not None else (ctx.target.sbuf_bytes_per_partition * 3) // 4,
        itemsize_sum=row_bytes,
        broadcast_dims=_broadcast_dims(g),
        row_local=row_local,
        store_exts=[(1,) * (len(g.domain) - v.type.rank) + tuple(v.type.shape) for v in escaping],
    )


def _tile_rows(ctx: LowerContext, g: FusionGroup) -> int:
    """Partition rows per tile of a group: the target's, or fewer when a ``tile_size`` knob
    sits on a value the group reads or computes (the smallest such knob wins)."""
    rows = ctx.partitions
    for op in g.ops:
        for v in (*op.operands, *op.results):
            knob = ctx.tile_knobs.get(v)
            if knob is not None:
                ctx.applied_knobs.add(knob[0])
                rows = min(rows, knob[1])
    return rows


def check_tile_knobs_applied(ctx: LowerContext) -> None:
    """A ``tile_size`` knob that no fusion group used would be silently ignored: reject it."""
    for name, rows in sorted({k for k in ctx.tile_knobs.values()}):
        if name not in ctx.applied_knobs:
            raise BuildError(
                f"layout knob {name!r}: tile_size {rows} has no effect: no fusion "
                f"group tiles {name!r} (matmuls and data movement choose their own "
                "tiles); remove the knob"
            )


def _emit_group(ctx: LowerContext, g: FusionGroup, plan, part, row_local) -> None:
    GroupEmitter(ctx, g, part.escaping(g), plan, row_local).run()


def _group_inputs(g: FusionGroup) -> list[Value]:
    """Values the group reads from outside itself (not uniform constants), in operand order."""
    members = set(g.ops)
    out: list[Value] = []
    for op in g.ops:
        for u in op.operands:
            if u.defining_op in members or isinstance(u.defining_op, T.FullOp) or u in out:
                continue
            out.append(u)
    return out


def _broadcast_dims(g: FusionGroup) -> set[int]:
    """Domain dims along which some input read by the group (not a constant) is broadcast."""
    dims: set[int] = set()
    for u in _group_inputs(g):
        ext = (1,) * (len(g.domain) - u.type.rank) + tuple(u.type.shape)
        dims |= {d for d, (e, n) in enumerate(zip(ext, g.domain)) if e == 1 and n > 1}
    return dims


def _lower_op(ctx: LowerContext, op: Op) -> None:
    """Lower an op outside fusion groups by its rule in ``ITEM_RULES``."""
    ctx.at_op(op)
    rule = rule_for(ITEM_RULES, type(op))
    if rule is not None:
        return rule(ctx, op)
    if isinstance(op, T.ReduceOp) and not op.attrs["keepdims"]:
        raise BuildError(f"lowering: {op.name} with keepdims=False is rewritten by decompose first")
    raise BuildError(f"lowering: no NKI lowering for {op.name} outside a fusion group")


@item_rule(T.ConstantOp)
def _lower_constant(_ctx: LowerContext, _op: Op) -> None:
    """Nothing to emit: a dense constant is an extra kernel input (made by ``lower_to_nki``)."""


@item_rule(T.FullOp)
def _lower_full(ctx: LowerContext, op: Op) -> None:
    """A uniform constant: an immediate of the instructions that use it, or (when some user
    reads it from HBM) written to HBM by a one-op fusion group."""
    v = op.result
    if v.type.size and any(not _consumed_as_immediate(u.op) for u in v.uses):  # into HBM
        g = FusionGroup(-1, v.type.shape, [op])
        plan = make_plan(
            g,
            None,
            partitions=ctx.partitions,
            sbuf_budget=ctx.target.sbuf_bytes_per_partition // 2,
            itemsize_sum=4,
        )
        GroupEmitter(ctx, g, [v], plan).run()


item_rule(T.MatmulOp)(lower_matmul)


def _consumed_as_immediate(user: Op) -> bool:
    return is_fusible(user) and not isinstance(user, ReturnOp)
