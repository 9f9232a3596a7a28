"""The tile frame of one fusion group: which tile holds each value for the current loop-nest
instance, how tiles are allocated and accessed, immediates, and the VectorE / ScalarE balance.

The tile-level rules (elementwise.py, reduce.py, select.py, sources.py, reduce_acc.py) and the
fold plan (fold.py) work on a frame only; the group emitter (group_emit.py) owns the loops,
levels and DMAs and fills the frame as it goes.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.dtypes import cast_array
from ...ir.value import Value
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T
from .context import LowerContext
from .groups import FusionGroup
from .instance import Instance
from .plan import GroupPlan


def immediate_of(v: Value):
    """The Python scalar a uniform constant value holds (rounded to its dtype), else None."""
    op = v.defining_op
    if not isinstance(op, T.FullOp):
        return None
    dt = v.type.dtype
    x = cast_array(np.array(op.attrs["value"]), dt)
    if dt.is_bool:
        return int(bool(x))
    return int(x) if dt.is_int else float(x.astype(np.float64))


class TileFrame:
    """Tiles of one fusion group (``group``) tiled by ``plan``. ``keep`` are the values that
    must exist as tiles (stored or passed to another participant of a row pipeline)."""

    def __init__(self, ctx: LowerContext, group: FusionGroup, plan: GroupPlan, keep=()):
        self.ctx, self.b, self.g, self.plan = ctx, ctx.b, group, plan
        self.members = set(group.ops)
        self.keep = set(keep)
        self.busy: dict[str, float] = {}
        self.tiles: dict[Value, Value] = {}
        self.const_cols: dict[tuple, Value] = {}
        self.const_tiles: dict[tuple, Value] = {}  # (value, dtype name) -> a tile filled with it
        self.fold = None  # the group's FoldPlan, set by the group emitter
        # values held in a full-row SBUF buffer (row_sequence.py): the buffer, read at the
        # instance's free-dim offsets instead of from offset 0
        self.resident: dict[Value, Value] = {}
        self.resident_values: set[Value] = set()  # values this group writes into such buffers
        # values read from another value's tile at free-dim offsets (a free slice of a row
        # pipeline value, pipeline_views.py): domain dim -> offset
        self.tile_offsets: dict[Value, dict[int, int]] = {}
        # values read or written every other element of their tile (one of an interleaved pair,
        # adjacent_halves.py): domain dim -> step
        self.tile_steps: dict[Value, dict[int, int]] = {}
        # parts of a concat assembled in one row tile (pipeline_views.py): part -> (concat,
        # offsets along the trailing free dims); the row pipeline's tile table (``pipe``, set
        # by the group emitter) holds the concat's tile of the current instance
        self.into: dict[Value, tuple] = {}
        # per-partition values held in one element of a wider statistics tile (the mean and
        # variance of moments.py): value -> element offset along the tile's free dim
        self.columns: dict[Value, int] = {}

    # ---- shapes ------------------------------------------------------------------------------
    def ext(self, v: Value) -> tuple[int, ...]:
        """``v``'s extents aligned to the domain (leading 1s for lower ranks)."""
        s = v.type.shape
        return self.plan.expand((1,) * (self.plan.source_rank - len(s)) + tuple(s))

    def per_partition(self, v: Value) -> bool:
        """True when ``v``'s tile has one element per partition."""
        ve = self.ext(v)
        return all(ve[d] == 1 for d in self.plan.f_dims)

    # ---- tiles and accesses -------------------------------------------------------------------
    def new_tile(self, v: Value, inst: Instance, dtype=None) -> Value:
        """Allocate the tile of ``v`` for this instance and register it (a resident value's
        tile is its full-row buffer)."""
        if v in self.resident:
            self.tiles[v] = self.resident[v]
            return self.resident[v]
        if v in self.into:
            return self._concat_tile(v, inst)
        shape = (inst.rows(),) + inst.free(self.ext(v))
        dtype = dtype or self.fold.narrowed.get(v.defining_op) or v.type.dtype
        t = self.b.alloc(shape, dtype, "sbuf", name=v.name_hint or "t")
        self.tiles[v] = t
        return t

    def _concat_tile(self, v: Value, inst: Instance) -> Value:
        """The row tile of the concat ``v`` is part of (allocated by its first part in program
        order), ``v`` written at its offsets."""
        cat, offs = self.into[v]
        first = next(op.result for op in self.g.ops if self.into.get(op.result, (None,))[0] is cat)
        if v is first:
            free = tuple(cat.type.shape[len(cat.type.shape) - len(offs) :])
            self.pipe[cat] = self.b.alloc(
                (inst.rows(),) + free, cat.type.dtype, "sbuf", name=cat.name_hint or "cat"
            )
        r = len(self.plan.domain)
        self.tile_offsets[v] = {d: o for d, o in zip(range(r - len(offs), r), offs) if o}
        self.tiles[v] = self.pipe[cat]
        return self.tiles[v]

    def scratch_tile(self, like: Value, inst: Instance, dtype) -> Value:
        """A scratch tile shaped like ``like``'s tile for this instance."""
        return self.b.alloc((inst.rows(),) + inst.free(self.ext(like)), dtype, "sbuf", name="tmp")

    def access(self, v: Value, inst: Instance, out_ext=None) -> Access:
        """Access to ``v``'s tile for this instance; F dims where ``v`` is broadcast but
        ``out_ext`` is not are read with stride 0."""
        t = self.tiles.get(v)
        if t is None:
            raise AssertionError(f"lowering bug: no tile for {v!r}")
        ve = self.ext(v)
        whole_row = v in self.resident
        shift = self.tile_offsets.get(v, {})
        dims = [DimSlice(Affine.of(0), inst.rows(), 1)]
        col = self.columns.get(v, 0)
        for d in self.plan.f_dims:
            if ve[d] == 1:
                n = inst.extents[d] if (out_ext is not None and out_ext[d] > 1) else 1
                dims.append(DimSlice(Affine.of(col) + shift.get(d, 0), n, 0 if n > 1 else 1))
            else:
                start = inst.offsets[d] if whole_row else Affine.of(0)
                step = self.tile_steps.get(v, {}).get(d, 1)
                dims.append(DimSlice(start + shift.get(d, 0), inst.extents[d], step))
        if not self.plan.f_dims:
            dims.append(DimSlice(Affine.of(0), 1, 1))
        return Access(t, tuple(dims))

    def tile_access(self, t: Value, inst: Instance, ext) -> Access:
        """Access to a scratch tile shaped like a value with extents ``ext``."""
        dims = [DimSlice(Affine.of(0), inst.rows(), 1)]
        for d in self.plan.f_dims:
            dims.append(DimSlice(Affine.of(0), 1 if ext[d] == 1 else inst.extents[d], 1))
        if not self.plan.f_dims:
            dims.append(DimSlice(Affine.of(0), 1, 1))
        return Access(t, tuple(dims))

    def const_column(self, value: float, inst: Instance) -> Access:
        """The fp32 column holding ``value`` on every partition (made at the nest's top)."""
        t = self.const_cols[(value, "f32")]
        return Access(t, (DimSlice(Affine.of(0), inst.rows(), 1), DimSlice(Affine.of(0), 1, 1)))

    # ---- engine balance ------------------------------------------------------------------------
    def count_fixed_vector_work(self) -> None:
        """Start the VectorE balance with the work only VectorE can do (reductions, selects),
        so movable instructions are placed with that in view."""
        free = math.prod(self.plan.free_shape)
        work = 0
        for op in self.g.ops:
            if op in self.fold.folded or op in self.fold.act or op in self.fold.aliased:
                continue
            if isinstance(op, T.WhereOp):
                work += 2 * free
            elif isinstance(op, T.ReduceOp):
                work += free
        self.busy["vector"] = work / self.ctx.target.vector_clock_hz

    def pick_engine(self, engines, elements: int, count: bool = True) -> str:
        """The least busy of ``engines`` for an instruction over ``elements`` per partition
        (busy time = elements / clock, a simple balance between VectorE and ScalarE); ``count``
        False for an instruction that runs once while the group's loop body repeats (it does
        not weigh in the body's balance)."""
        clock = self._clocks()
        best = min(engines, key=lambda e: (self.busy.get(e, 0.0) + elements / clock[e], e))
        if count:
            self.busy[best] = self.busy.get(best, 0.0) + elements / clock[best]
        return best

    def _clocks(self) -> dict:
        t = self.ctx.target
        return {"vector": t.vector_clock_hz, "scalar": t.scalar_clock_hz, "gpsimd": t.gpsimd_clock_hz}

    def note(self, engine: str, elements: int) -> None:
        """Account an instruction's work to an engine (for ``pick_engine``)."""
        clock = self._clocks()
        if engine in clock:
            self.busy[engine] = self.busy.get(engine, 0.0) + elements / clock[engine]
