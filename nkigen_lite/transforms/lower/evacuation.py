"""Which engine, VectorE or ScalarE, evacuates a PSUM tile: the one that finishes it with the
least busy time so far.

Only VectorE and ScalarE read PSUM. A kernel with many evacuations (Qᵀ, Kᵀ and Pᵀ copies,
``O · 1/l`` scaled on its way out) keeps both engines equally loaded by giving each copy to the
engine whose busy time (the cost model's per-instruction costs, perf/instruction_cost.py, of
every instruction emitted so far) plus the copy's own cost is smaller.
"""

from __future__ import annotations

from ...nki.target import TRN2
from ...perf.instruction_cost import FREE_OPS, instruction_cost


class EvacuationBalance:
    """Busy time per engine of the instructions a builder has emitted, read incrementally."""

    def __init__(self, b, target=TRN2):
        self.b, self.target = b, target
        self.busy: dict[str, float] = {}
        self._seen = None  # the last instruction counted

    def _update(self) -> None:
        op = self._seen._next if self._seen is not None else self.b.graph.body.first
        while op is not None:
            if not isinstance(op, FREE_OPS):
                c = instruction_cost(op, self.target)
                self.busy[c.engine] = self.busy.get(c.engine, 0.0) + c.ns
            self._seen, op = op, op._next

    def engine(self, n: int, fast: bool = False) -> str:
        """ "vector" or "scalar" for an evacuation of ``n`` elements per partition (``fast``:
        16-bit on both sides, VectorE's 2x mode for a PSUM source)."""
        self._update()
        t = self.target
        factor = t.vector_perf_mode_other_factor if fast else 1
        vec = max(t.min_ii_cycles, n / factor) * 1e9 / t.vector_clock_hz
        sca = max(t.min_ii_cycles, n) * 1e9 / t.scalar_clock_hz
        v = self.busy.get("vector", 0.0) + vec
        return "vector" if v <= self.busy.get("scalar", 0.0) + sca else "scalar"
