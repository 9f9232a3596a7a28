"""A reshape of a row gather's index dims moves onto the ids.

``reshape(gather_rows(table, ids), s)`` where ``s`` keeps the row shape ``table.shape[1:]`` as
its trailing dims only regroups the index dims (row-major), so it equals
``gather_rows(table, reshape(ids, lead))``: the indirect DMA then writes the rows straight into
the final layout instead of a gathered tensor that a copy reshapes (an embedding lookup
``table[ids.reshape(-1)].reshape(b, s, h)`` moves the selected rows once).
"""

from __future__ import annotations

import math

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ..match import def_op, make, replace


class ReshapeOfGatherRows(RewritePattern):
    """reshape(gather_rows(t, ids), lead + t.shape[1:]) → gather_rows(t, reshape(ids, lead))"""

    root = T.ReshapeOp

    def match_and_rewrite(self, op, rw):
        g = def_op(op.operand(0), T.GatherRowsOp)
        if g is None or g.result.num_uses != 1:
            return False
        table, ids = g.operands
        row = tuple(table.shape[1:])
        shape = tuple(op.attrs["shape"])
        lead = shape[: len(shape) - len(row)]
        if len(shape) < len(row) or shape[len(lead) :] != row or math.prod(lead) != ids.type.size:
            return False
        new_ids = make(rw, T.ReshapeOp, [ids], {"shape": lead})
        return replace(rw, op, make(rw, T.GatherRowsOp, [table, new_ids]))


GATHER_SHAPE_PATTERNS = (ReshapeOfGatherRows(),)
