"""Control flow: ``nki.fori_loop`` with a body region and an ``index`` induction variable."""

from __future__ import annotations

from ...ir.attrs import INT, Attr
from ...ir.errors import BuildError
from ...ir.op import Op
from ...ir.traits import HasRegion, SideEffect
from ..types import IndexType


class ForiLoopOp(Op):
    """``nki.fori_loop {lower, upper, step} (%i: index) { ... }``: an on-device loop running
    its body for i = lower, lower+step, ... < upper (at least once)."""

    name = "nki.fori_loop"
    traits = frozenset({SideEffect, HasRegion})
    attr_spec = (Attr("lower", INT), Attr("upper", INT), Attr("step", INT))
    num_regions = 1

    @classmethod
    def infer(cls, operand_types, _attrs):
        if operand_types:
            raise BuildError("nki.fori_loop takes no operands")
        return []

    def verify(self) -> None:
        super().verify()
        lo, hi, st = self.attrs["lower"], self.attrs["upper"], self.attrs["step"]
        if st <= 0:
            raise BuildError(f"nki.fori_loop step must be positive, got {st}")
        if hi <= lo:
            raise BuildError(f"nki.fori_loop must run at least once: lower {lo} >= upper {hi}")
        if len(self.regions[0].blocks) != 1:
            raise BuildError("nki.fori_loop has a single-block body")
        args = self.body.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            raise BuildError("nki.fori_loop body takes exactly one argument of type index")

    @property
    def body(self):
        return self.regions[0].block

    @property
    def index(self):
        """The induction variable."""
        return self.body.args[0]

    @property
    def trip_count(self) -> int:
        lo, hi, st = self.attrs["lower"], self.attrs["upper"], self.attrs["step"]
        return len(range(lo, hi, st))

    @property
    def last(self) -> int:
        """Value of the index on the last iteration."""
        lo, st = self.attrs["lower"], self.attrs["step"]
        return lo + (self.trip_count - 1) * st
