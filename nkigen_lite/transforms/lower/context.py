"""State shared while lowering one tensor graph to NKI: the NKI builder, HBM homes of tensor
values, view caching, extra constant inputs and the layout roles."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ...ir.errors import BuildError
from ...ir.printer import Printer
from ...ir.value import Value
from ...nki.builder import Builder as NkiBuilder
from ...nki.target import Target
from .attention_out import spill
from .homes import HbmHome


@dataclass
class LowerContext:
    """Everything a lowering family needs; ``homes`` maps tensor Values to HBM locations."""

    target: Target
    b: NkiBuilder
    roles_of: Callable[[Value], tuple[str, ...] | None]
    printer: Printer | None = None
    homes: dict[Value, HbmHome] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    _views: dict[tuple, Value] = field(default_factory=dict)
    _scratch: int = 0
    # layout ``tile_size`` knobs: value -> (knob name, rows); the knob names some group applied
    tile_knobs: dict[Value, tuple[str, int]] = field(default_factory=dict)
    applied_knobs: set[str] = field(default_factory=set)
    # while a tensor.for_loop body is lowered: the outermost nki.fori_loop, before which HBM
    # allocations and views are placed (they are kernel-level buffers reused every iteration)
    hoist_before: object = None
    reserved_names: set = field(default_factory=set)  # kernel input / output names in use
    # values stored to HBM only because an op was lowered alone (limits.py): "spill<N>" buffers
    spilled: set[Value] = field(default_factory=set)
    alone: set = field(default_factory=set)  # the ops lowered in groups of their own
    # physical cores the kernel will be split over (nk.split_cores): straight-line lowerings
    # put their work in a top-level loop of lnc trips (passes.LoweringCores, row_blocks.py)
    lnc: int = 1
    _spills: int = 0
    # causal attention op -> {operand index: SBUF buffer holding it for every row} (front_keep.py)
    kept_rows: dict = field(default_factory=dict)
    # value -> attention_out.KeptRows: an attention output read from SBUF (attention_out.py)
    kept_out: dict = field(default_factory=dict)
    # value -> SBUF access holding its row-major image, rows on the partitions (onchip_rows.py)
    on_chip: dict = field(default_factory=dict)
    # value -> storage order of its scratch buffer, None for row-major (scratch_order.py; set
    # by the driver)
    scratch_order: Callable[[Value], tuple[int, ...] | None] | None = None

    # ---- source locations ----------------------------------------------------------------
    def name(self, v: Value) -> str:
        return self.printer.name(v) if self.printer is not None else "%?"

    def at(self, text: str | None) -> None:
        """Stamp ``text`` as the location of the NKI ops emitted from now on."""
        self.b.loc = text

    def at_op(self, op) -> None:
        label = f"{op.name} {self.name(op.results[0])}" if op.results else op.name
        self.at(f"{label} at {op.loc}" if op.loc else label)

    # ---- HBM -------------------------------------------------------------------------------
    def home(self, v: Value) -> HbmHome:
        h = self.homes.get(v)
        if h is None and v in self.kept_out:  # kept on chip: stored now for a reader from HBM
            spill(self, v)
            h = self.homes.get(v)
        if h is None:
            raise BuildError(f"lowering: {v!r} has no HBM home (it was never stored)")
        return h

    def alloc_hbm(self, shape, dtype, name: str | None = None) -> HbmHome:
        """A fresh HBM buffer (kernel top level) and its whole-buffer home."""
        if name is None:
            name = f"scratch{self._scratch}"
            self._scratch += 1
        with self.top_level("HBM allocation"):
            base = self.b.alloc(tuple(shape), dtype, "hbm", name=name)
        return HbmHome.whole(base)

    def home_for_store(self, v: Value) -> HbmHome:
        """The home a produced value is stored to (pre-assigned, or fresh scratch, row-major
        unless scratch_order.py orders it as the tiles that fill it)."""
        if v not in self.homes:
            name = None
            if v in self.spilled:
                name, self._spills = f"spill{self._spills}", self._spills + 1
            order = None if name is not None or self.scratch_order is None else self.scratch_order(v)
            if order is None:
                self.homes[v] = self.alloc_hbm(v.type.shape, v.type.dtype, name=name)
            else:  # stored in the order of its tiles (scratch_order.py)
                h = self.alloc_hbm(tuple(v.type.shape[d] for d in order), v.type.dtype)
                self.homes[v] = h.transpose(tuple(order.index(d) for d in range(len(order))))
        return self.homes[v]

    def view(self, h: HbmHome) -> Value:
        """An NKI value addressing exactly ``h`` (the base itself, or a cached hbm_view)."""
        if h.is_whole_base:
            return h.base
        shape, strides = h.shape, h.strides
        key = (id(h.base), h.offset, shape, strides)
        v = self._views.get(key)
        if v is None:
            with self.top_level("hbm_view"):
                v = self.b.hbm_view(h.base, shape, strides, h.offset)
            self._views[key] = v
        return v

    @contextmanager
    def top_level(self, what: str):
        """Emit at the kernel's top level: directly when no loop is open, else (inside a
        tensor.for_loop body) just before its outermost nki.fori_loop."""
        blocks = self.b._blocks
        if len(blocks) == 1:
            yield
            return
        if self.hoist_before is None:
            raise AssertionError(f"lowering bug: {what} emitted inside a loop")
        top = blocks[0]
        last = top.last
        self.b._blocks = [top]
        try:
            yield
        finally:
            self.b._blocks = blocks
            op = last.next_op if last is not None else top.first
            while op is not None:  # move what was appended before the loop
                nxt = op.next_op
                top.remove(op)
                top.insert_before(self.hoist_before, op)
                op = nxt

    @property
    def partitions(self) -> int:
        return self.target.num_partitions
