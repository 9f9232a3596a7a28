"""Lowering limits that a smaller fusion group avoids.

A tile-level rule that meets a layout the hardware cannot express for its op inside the
current group (an iota along a partition dim that shares the partitions, a reduction over free
dims that are not the trailing ones of its tile, a partition reduction keeping several free
dims, a stored value broadcast over an inner partition dim) raises ``LoweringLimit``. The
driver then lowers the graph again with that op alone in its group: its operands and result go
through HBM scratch buffers named ``spill<N>`` (counted by ``k.stats().hbm_spills``). Only when
the op is already alone is the error final.
"""

from __future__ import annotations

from ...ir.errors import BuildError
from ...ir.op import Op


class LoweringLimit(BuildError):
    """``op`` cannot be lowered inside its current fusion group (see the module docstring)."""

    def __init__(self, message: str, op: Op | None):
        super().__init__(message)
        self.op = op
