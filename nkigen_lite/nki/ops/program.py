"""``nki.program_id``: which physical core of a logical NeuronCore runs the kernel.

``%pid = nki.program_id {lnc = 2}`` declares a kernel launched on ``lnc`` physical cores (LNC=2:
``kernel[2](...)``, facts §1.2) and gives this core's id, 0 .. lnc - 1, as an ``index`` value
that access offsets may use like a loop index (``nl.program_id(0)`` in NKI). Every core runs
the same program; each core's share of the work comes from offsets in ``%pid``. A kernel has at
most one, at its top level.
"""

from __future__ import annotations

from ...ir.attrs import INT, Attr
from ...ir.errors import BuildError
from ...ir.op import Op
from ...ir.traits import Pure
from ..types import IndexType


class ProgramIdOp(Op):
    """``%pid = nki.program_id {lnc = 2} : index``: this core's id within a logical core."""

    name = "nki.program_id"
    traits = frozenset({Pure})
    attr_spec = (Attr("lnc", INT),)

    @classmethod
    def infer(cls, operand_types, attrs):
        if operand_types:
            raise BuildError("nki.program_id takes no operands")
        if attrs["lnc"] < 1:
            raise BuildError(f"nki.program_id: lnc {attrs['lnc']} must be at least 1")
        return [IndexType()]

    @property
    def range(self) -> tuple[int, int]:
        """(first, last) value of the id."""
        return 0, self.attrs["lnc"] - 1


def program_id_op(graph) -> ProgramIdOp | None:
    """The kernel's ``nki.program_id`` (top level), or None for a one-core kernel."""
    return next((op for op in graph.body if isinstance(op, ProgramIdOp)), None)


def lnc_of(graph) -> int:
    """Physical cores the kernel is launched on (1 without an ``nki.program_id``)."""
    op = program_id_op(graph)
    return op.attrs["lnc"] if op is not None else 1
