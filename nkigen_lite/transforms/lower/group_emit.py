"""Emit one fusion group as a loop nest: loads through broadcast-aligned HBM views, tile-level
compute (tile_ops.py), stores of the values that leave the group.

Every value of the group gets a *level*: the number of enclosing loops it depends on. A value
is emitted once at its level, so loads and computations that do not depend on an inner loop
(a weight vector, a per-head constant) are hoisted out of it. Inner loops are emitted as a
fori_loop over full chunks plus a peeled remainder instance with a smaller static extent.
"""

from __future__ import annotations

import math

from ...ir.value import Value
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T
from . import adjacent_halves
from .context import LowerContext
from .destrided_load import load_destrided, span_view
from .fold import FoldPlan
from .frame import TileFrame, immediate_of
from .groups import FusionGroup
from .homes import HbmHome
from .instance import Instance, loops_of
from .limits import LoweringLimit
from .loopnest import run_loop_nest
from .onchip_rows import note_stored, rows_on_chip
from .online import online_pairs
from .plan import GroupPlan
from .reduce_acc import combine_accumulator, finish_accumulator, start_accumulator
from .tile_ops import emit_op


class GroupEmitter(TileFrame):
    """Lowers one FusionGroup (see module docstring); its tiles live in the TileFrame."""

    def __init__(
        self,
        ctx: LowerContext,
        group: FusionGroup,
        escaping: list[Value],
        plan: GroupPlan,
        row_local=lambda _op: True,
        pipe: dict | None = None,
        provided=(),
        publish=(),
        resident=None,
        resident_values=(),
        resident_level: int = -1,
    ):
        """``pipe`` is the tile table shared with the other participants of a row pipeline:
        ``provided`` values are read from it instead of HBM, ``publish`` values are put in it.
        ``resident`` (value -> full-row buffer, shared with the group that reads them,
        row_sequence.py): published values kept whole in SBUF, allocated by this group at
        ``resident_level``."""
        super().__init__(ctx, group, plan, set(escaping) | set(publish))
        self.loops = loops_of(plan)
        self.loop_index = {lp.dim: k for k, lp in enumerate(self.loops)}
        self.escaping = list(escaping)
        self.pipe = pipe if pipe is not None else {}
        self.provided = set(provided)
        self.publish = set(publish)
        if resident is not None:
            self.resident = resident
        self.resident_values = set(resident_values)
        self.resident_level = resident_level if self.resident_values & self.publish else -1
        self.fold = FoldPlan.build(self)
        self.externals: list[Value] = []
        seen: set[Value] = set()
        for op in group.ops:
            for u in self.fold.operands_of(op):
                if u.defining_op not in self.members and immediate_of(u) is None and u not in seen:
                    seen.add(u)
                    self.externals.append(u)
        self.levels: dict[Value, int] = {}
        for u in self.externals:
            self.levels[u] = self._level_of_ext(self.ext(u))
        # accumulating reductions: combined at their operand's level, finished at their own
        self.accumulating = [op for op in group.ops if isinstance(op, T.ReduceOp) and not row_local(op)]
        self.combine_level: dict = {}
        self.accumulators: dict = {}
        self.online = online_pairs(group.ops, self.accumulating)  # running max -> running sum
        self.rescale: dict = {}  # running sum -> this chunk's rescale factor
        for op in group.ops:
            self.levels[op.result] = self._op_level(op)
            if op in self.accumulating:
                self.combine_level[op] = self.levels[op.result]
                self.levels[op.result] = self._level_of_ext(self.ext(op.result))
        # a value is stored once per instance of the loops its own extents depend on
        self.store_level = {v: max(self.levels[v], self._level_of_ext(self.ext(v))) for v in self.escaping}
        self.count_fixed_vector_work()
        self.load_views: dict[Value, Value] = {}
        self.span_views: dict[Value, Value | None] = {}
        self.store_views: dict[Value, Value] = {}
        # windows side by side on the last axis, moved by one DMA (adjacent_halves.py)
        self.load_pairs: dict = {}
        self.store_pairs: dict = {}

    # ---- levels --------------------------------------------------------------------------------
    def _level_of_ext(self, ext) -> int:
        lv = 0
        for d, e in enumerate(ext):
            if e > 1 and d in self.loop_index:
                lv = max(lv, self.loop_index[d] + 1)
        return lv

    def _op_level(self, op) -> int:
        if isinstance(op, T.IotaOp):
            ax = op.attrs["axis"] + len(self.plan.domain) - op.result.type.rank
            if op.result.type.shape[op.attrs["axis"]] > 1 and ax in self.loop_index:
                return self.loop_index[ax] + 1
            return 0
        lv = 0
        for u in self.fold.operands_of(op):
            if u in self.levels:
                lv = max(lv, self.levels[u])
            elif immediate_of(u) is None:
                lv = max(lv, self.levels.get(u, 0))
        return lv

    # ---- driver --------------------------------------------------------------------------------
    def run(self) -> None:
        run_loop_nest(self.b, self.loops, [self])

    # ---- participant of a (possibly shared) loop nest -------------------------------------------
    def prepare(self) -> None:
        self.ctx.at(self.label())
        self._prepare_views()

    def top_instance(self) -> Instance:
        return Instance.top(self.plan)

    def enter(self, inst: Instance, level: int, offset, extent: int) -> Instance:
        return inst.enter(self.loops[level].dim, offset, extent)

    def before(self, level: int, inst: Instance) -> None:
        if level == self.resident_level:
            self._alloc_resident(inst)
        for op in self.accumulating:
            if self.levels[op.result] == level:
                self.ctx.at_op(op)
                start_accumulator(self, op, inst)
        self._emit_items(level, inst)

    def after(self, level: int, inst: Instance) -> None:
        for op in self.accumulating:
            if self.levels[op.result] == level:
                self.ctx.at_op(op)
                finish_accumulator(self, op, inst)
                if op.result in self.publish:
                    self.pipe[op.result] = self.tiles[op.result]
                if op.result in self.store_views:
                    self.ctx.at(f"store {self.ctx.name(op.result)}")
                    self._store(op.result, inst)
        self.ctx.at(self.label())

    def _alloc_resident(self, inst: Instance) -> None:
        """The full-row buffers of this group's published resident values."""
        for op in self.g.ops:
            v = op.result
            if v in self.publish and v in self.resident_values:
                ve = self.ext(v)
                free = tuple(self.plan.domain[d] if ve[d] > 1 else 1 for d in self.plan.f_dims) or (1,)
                self.ctx.at(f"resident row {self.ctx.name(v)}")
                self.resident[v] = self.b.alloc((inst.rows(),) + free, v.type.dtype, "sbuf", name="row")
        self.ctx.at(self.label())

    def label(self) -> str:
        """Location text of the group's loops and views."""
        names = ", ".join(self.ctx.name(op.result) for op in self.g.ops[:4])
        more = f", +{len(self.g.ops) - 4}" if len(self.g.ops) > 4 else ""
        return f"fusion group over {'x'.join(map(str, self.plan.domain)) or 'scalar'}: {names}{more}"

    def _aligned_view(self, h: HbmHome, for_store: bool) -> Value:
        """View of ``h`` with the domain's rank, dims in plan order; broadcast dims take the
        domain extent with stride 0 (loads) except F dims, which keep extent 1."""
        dom, plan = self.plan.domain, self.plan
        lead = plan.source_rank - len(h.shape)
        shape, strides = plan.expand_strides((1,) * lead + tuple(h.shape), (0,) * lead + tuple(h.strides))
        shape, strides = list(shape), list(strides)
        fset = set(plan.f_dims)
        for d in range(len(dom)):
            if shape[d] == 1 and dom[d] > 1 and not for_store and d not in fset:
                shape[d], strides[d] = dom[d], 0
        order = plan.order
        return self.ctx.view(
            HbmHome(h.base, h.offset, tuple(shape[d] for d in order), tuple(strides[d] for d in order))
        )

    def _prepare_views(self) -> None:
        for u in self.externals:
            if u not in self.provided:
                self.load_views[u] = self._aligned_view(self.ctx.home(u), False)
                self.span_views[u] = span_view(self.ctx, self.load_views[u])
        for v in self.escaping:
            self.store_views[v] = self._aligned_view(self.ctx.home_for_store(v), True)
        loadable = [u for u in self.externals if u not in self.provided and u not in self.resident]
        self.load_pairs = adjacent_halves.pairs(self, self.load_views, loadable, self.levels)
        index = {op.result: k for k, op in enumerate(self.g.ops)}
        storable = sorted(
            (
                v
                for v in self.escaping
                if v not in self.resident_values
                and v not in self.into
                and v.defining_op not in self.combine_level
                and v.defining_op not in self.fold.narrowed
                and all(self.ext(v)[d] == self.plan.domain[d] for d in self.plan.p_dims)
            ),
            key=index.__getitem__,
        )
        levels = {v: (self.levels[v], self.store_level[v]) for v in storable}
        self.store_pairs = adjacent_halves.pairs(self, self.store_views, storable, levels)
        for key in self.fold.const_columns():
            self.const_cols[key] = None  # filled at level 0

    def _emit_constants(self, inst: Instance) -> None:
        """The group's constant columns and tiles, filled once before its loops."""
        self.ctx.at("constant columns")
        for value, dtype_name in list(self.const_cols):
            t = self.b.alloc((inst.rows(), 1), "f32", "sbuf", name="cst")
            self.b.memset(dst=t, value=float(value))
            self.const_cols[(value, dtype_name)] = t
        for value, dtype_name, like in self.fold.const_tiles():
            if (value, dtype_name) not in self.const_tiles:
                t = self.scratch_tile(like, inst, like.type.dtype)
                self.b.memset(dst=t, value=float(value))
                self.const_tiles[(value, dtype_name)] = t
        for (value, dtype_name, ext), like in self.fold.bit_consts.items():  # GpSimd bitwise operands
            t = self.scratch_tile(like, inst, like.type.dtype)
            self.b.memset(dst=t, value=value, engine="gpsimd")
            self.const_tiles[("bits", value, dtype_name, ext)] = t

    def _emit_items(self, level: int, inst: Instance) -> None:
        if level == 0:
            self._emit_constants(inst)
        for u in self.externals:
            if self.levels[u] == level:
                if u in self.provided:
                    self._take_provided(u)
                    continue
                self.ctx.at(f"load {self.ctx.name(u)}")
                self._load(u, inst)
        for op in self.g.ops:
            if op in self.combine_level:
                if self.combine_level[op] == level:
                    self.ctx.at_op(op)
                    combine_accumulator(self, op, inst)
                continue
            if self.levels[op.result] != level or op in self.fold.folded:
                continue
            self.ctx.at_op(op)
            emit_op(self, op, inst)
            if op.result in self.publish:
                self.pipe[op.result] = self.tiles[op.result]
        for v in self.escaping:
            if self.store_level[v] == level and v.defining_op not in self.combine_level:
                self.ctx.at(f"store {self.ctx.name(v)}")
                self._store(v, inst)
        self.ctx.at(self.label())

    def _take_provided(self, u: Value) -> None:
        """``u``'s tile from the row pipeline's table, read at the free-dim offsets of a free
        slice (pipeline_views.py)."""
        self.tiles[u] = self.pipe[u]
        offsets = self.pipe.offsets(u) if hasattr(self.pipe, "offsets") else None
        if offsets is not None and any(offsets):
            r = len(self.plan.domain)
            self.tile_offsets[u] = dict(zip(range(r - len(offsets), r), offsets))

    # ---- DMA ----------------------------------------------------------------------------------
    def _window(self, view: Value, inst: Instance) -> Access:
        """The DMA window of this instance over a view in plan order (extent-1 dims at 0)."""
        plan = self.plan
        dims = []
        shape = view.type.shape
        for k, d in enumerate(plan.order):
            n = shape[k]
            if d in plan.i_dims:
                if n == 1:
                    dims.append(DimSlice(Affine.of(0), 1, 1))
                else:
                    dims.append(DimSlice(inst.offsets[d], 1, 1))
            elif n == 1:
                dims.append(DimSlice(Affine.of(0), 1, 1))
            else:
                dims.append(DimSlice(inst.offsets[d], inst.extents[d], 1))
        return Access(view, tuple(dims))

    def _load(self, u: Value, inst: Instance) -> None:
        if u in self.load_pairs:
            self._load_pair(u, inst)
            return
        if self._partition_broadcast(u, inst) or self._take_held(u, inst):
            return
        self.new_tile(u, inst)
        dst = self.access(u, inst)
        held = self._held(u, dst)
        src = held or self._window(self.load_views[u], inst)
        if held is None and load_destrided(self.b, dst, src, self.span_views.get(u)):
            return
        self.b.dma_copy(dst=dst, src=src)

    def new_tile(self, v: Value, inst: Instance, dtype=None) -> Value:
        """As TileFrame.new_tile; a value stored with its neighbour (adjacent_halves.py) is
        written into the tile the pair's lead allocates, at its offset."""
        if v not in self.store_pairs:
            return super().new_tile(v, inst, dtype)
        return self._pair_tile(v, self.store_pairs[v], inst)

    def _pair_tile(self, v: Value, pair, inst: Instance) -> Value:
        lead, shift, view, step = pair
        d = self.plan.f_dims[-1]
        if v is lead:
            free = inst.free(self.ext(v))
            shape = (inst.rows(),) + free[:-1] + (view.type.shape[-1],)
            self.tiles[v] = self.b.alloc(shape, v.type.dtype, "sbuf", name=v.name_hint or "t")
        else:
            self.tiles[v] = self.tiles[lead]
        if shift:
            self.tile_offsets[v] = {d: shift}
        if step != 1:
            self.tile_steps[v] = {d: step}
        return self.tiles[v]

    def _load_pair(self, u: Value, inst: Instance) -> None:
        """Load both halves of a pair with one DMA (by its lead; the other reads that tile)."""
        pair = self.load_pairs[u]
        self._pair_tile(u, pair, inst)
        lead, _, view, _ = pair
        if u is lead:
            n2 = view.type.shape[-1]
            dst = adjacent_halves.whole_last(self.access(u, inst), n2)
            src = adjacent_halves.whole_last(self._window(view, inst), n2)
            self.b.dma_copy(dst=dst, src=src)

    def _take_held(self, u: Value, inst: Instance) -> bool:
        """Take the SBUF tile holding ``u`` (onchip_rows.py) as ``u``'s tile, read in place with
        no DMA, when it has exactly the shape and dtype this group's tile of ``u`` would have
        (``_held``'s conditions: no loops, ``u`` whole in row-major order)."""
        if u in self.resident or u in self.into or u in self.store_pairs:
            return False
        shape = (inst.rows(),) + inst.free(self.ext(u))
        if not self._whole_row_major(u, math.prod(shape)):
            return False
        held = rows_on_chip(self.ctx, u, shape[0])
        if held is None or held.dtype != u.type.dtype or not held.is_whole():
            return False
        if tuple(held.tensor.type.shape) != shape:
            return False
        self.tiles[u] = held.tensor
        return True

    def _whole_row_major(self, u: Value, size: int) -> bool:
        """True when this group has no loops and its tile of ``u`` (``size`` elements) is ``u``
        whole in row-major order (dims in increasing order, none broadcast)."""
        if self.loops or len(self.b._blocks) != 1 or size != u.type.size:
            return False
        ve = self.ext(u)
        dims = [d for d in self.plan.order if ve[d] > 1]
        return dims == sorted(dims) and u not in self.tile_offsets and u not in self.resident

    def _held(self, u: Value, dst: Access) -> Access | None:
        """The SBUF tile holding all of ``u`` row-major (onchip_rows.py), read by an SBUF -> SBUF
        DMA, when this group has no loops and its tile of ``u`` is ``u`` whole in row-major
        order (dims in increasing order, none broadcast)."""
        if not self._whole_row_major(u, dst.size):
            return None
        held = rows_on_chip(self.ctx, u, None)
        return held if held is not None and held.dtype == dst.dtype else None

    def _partition_broadcast(self, u: Value, inst: Instance) -> bool:
        """Load an input that is the same on every partition (e.g. a weight vector) into one
        partition and broadcast it on the Tensor engine (ones[1,P]ᵀ · row), instead of a
        stride-0 DMA that would read it from HBM once per partition. Loaded once per kernel, or
        once per free-dim chunk (and row tile) when the group's rows are chunked."""
        plan, ve, dt = self.plan, self.ext(u), u.type.dtype
        rows = inst.rows()
        free_dims = [d for d in plan.f_dims if ve[d] > 1]
        in_loops = [lp.kind for lp in self.loops[: self.levels[u]] if lp.dim in free_dims]
        if (
            (self.levels[u] != 0 and not in_loops)
            or rows < 2
            or len(free_dims) != 1
            or any(ve[d] > 1 for d in plan.p_dims + plan.i_dims)
            or dt.name not in self.ctx.target.dtypes_of("tensor")
            or dt.itemsize < 2
        ):
            return False
        fd = free_dims[0]
        n = inst.extents[fd]
        row = rows_on_chip(self.ctx, u, 1) if not self.loops and n == u.type.size else None
        if row is not None and row.tensor.type.shape[1:] == (n,):  # left in SBUF (onchip_rows.py)
            row = row.tensor
        else:
            row = self.b.alloc((1, n), dt, "sbuf", name="row")
            win = self._window(self.load_views[u], inst)
            win = Access(
                win.tensor,
                tuple(
                    DimSlice(x.offset, 1, 1) if k < len(plan.i_dims) + len(plan.p_dims) else x
                    for k, x in enumerate(win.dims)
                ),
            )
            self.b.dma_copy(dst=row, src=win)
        ones_dt = "f32" if dt.name in self.ctx.target.matmul_fp32_class else dt
        ones = self.b.alloc((1, rows), ones_dt, "sbuf", name="ones")
        self.b.memset(dst=ones, value=1.0)
        self.new_tile(u, inst)
        full = self.access(u, inst)
        pos = 1 + list(plan.f_dims).index(fd)
        fmax = self.ctx.target.psum_bank_fmax
        for j in range(0, n, fmax):
            w = min(fmax, n - j)
            ps = self.b.alloc((rows, fmax), "f32", "psum", name="bcast")
            psum_acc = Access(ps, (DimSlice(Affine.of(0), rows, 1), DimSlice(Affine.of(0), w, 1)))
            self.b.nc_matmul(
                dst=psum_acc,
                stationary=ones,
                moving=Access(row, (DimSlice(Affine.of(0), 1, 1), DimSlice(Affine.of(j), w, 1))),
            )
            dims = list(full.dims)
            dims[pos] = DimSlice(Affine.of(j), w, 1)
            self.b.tensor_copy(
                dst=Access(full.tensor, tuple(dims)),
                src=psum_acc,
                engine=self.pick_engine(("vector", "scalar"), w, count=self.levels[u] > 0 or not self.loops),
            )
        return True

    def _store_pair(self, v: Value, inst: Instance) -> None:
        """Store both members of a pair with one DMA, at the first one's store (both are
        computed by then: they share their level)."""
        lead, _, view, _ = self.store_pairs[v]
        other = next(w for w, p in self.store_pairs.items() if p[0] is lead and w is not v)
        if self.escaping.index(other) < self.escaping.index(v):
            return
        n2 = view.type.shape[-1]
        src = adjacent_halves.whole_last(self.access(v, inst), n2)
        dst = adjacent_halves.whole_last(self._window(view, inst), n2)
        self.b.dma_copy(dst=dst, src=src)

    def _store(self, v: Value, inst: Instance) -> None:
        if v in self.store_pairs:
            self._store_pair(v, inst)
            return
        plan, ve = self.plan, self.ext(v)
        # rows of a value broadcast over some partition dims: only the leading rows are distinct
        seen_full = False
        rows = 1
        for d in plan.p_dims:
            if plan.domain[d] == 1:
                continue
            if ve[d] > 1:
                seen_full = True
                rows *= inst.extents[d]
            elif seen_full:
                raise LoweringLimit(
                    f"lowering: cannot store {v!r}: it is broadcast over an inner partition dim "
                    f"of its fusion group (domain {plan.domain}); a DMA from SBUF reads "
                    "contiguous partitions",
                    v.defining_op,
                )
        src = self.access(v, inst)
        src = Access(src.tensor, (DimSlice(Affine.of(0), rows, 1),) + src.dims[1:])
        dst = self._window(self.store_views[v], inst)
        self.b.dma_copy(dst=dst, src=src)
        # the tile is v's row-major image only when its partition then free dims are v's axes
        # in order (a group laid out with a later axis on the partitions holds v transposed)
        axes = [d for d in plan.p_dims + plan.f_dims if ve[d] > 1]
        if axes == sorted(axes):
            note_stored(self.ctx, v, src, top_level=len(self.b._blocks) == 1)
