"""An output that is a reshape of a value the kernel computes is computed straight into it.

``y = reshape(x)`` returned from the graph, with ``x`` produced by the kernel and read by
nothing else, would be stored to scratch and copied into ``y``'s buffer (one HBM -> HBM DMA of
the whole output). Instead the output buffer is allocated first and ``x``'s home is the reshaped
view of it, so the reshape is a view of the output and no copy is made (the GQA rewrite of
canonical/gqa.py leaves such a merge after the attention's last matmul).
"""

from __future__ import annotations

from ...tensor import ops as T
from .context import LowerContext


def place_reshaped_outputs(ctx: LowerContext, outputs: dict, producers: set, skip=()) -> None:
    """Pre-assign homes so that single-use producers of reshaped outputs write the output."""
    returned = set(outputs.values())
    for name, v in outputs.items():
        op = v.defining_op
        if name in skip or v in ctx.homes or not isinstance(op, T.ReshapeOp):
            continue
        x = op.operand(0)
        if x not in producers or x in ctx.homes or x in returned or x.num_uses != 1:
            continue
        ctx.at(f"output {name}")
        h = ctx.alloc_hbm(v.type.shape, v.type.dtype, name=name)
        hx = h.reshape(x.type.shape)
        if hx is not None:
            ctx.homes[x] = hx
