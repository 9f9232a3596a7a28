"""An interleaving stack (``np.stack([a, b], -1)``, the output of an interleaved RoPE) computed
straight into its result by the group that produces both parts.

``concat([reshape(a, (..., n, 1)), reshape(b, (..., n, 1))], axis=-1)`` of two values one
fusion group computes would store ``a`` and ``b`` to scratch and interleave them on chip in a
second pass (concat_last.py: both read back, the result written again). When the group's loops
do not tile its last axis, ``a`` and ``b`` get the even and odd elements of the result as their
homes instead (views with last stride 2); the group emitter pairs those two stores
(adjacent_halves.py: one tile holds both, each written with step 2, one contiguous store), and
the concat copies nothing.
"""

from __future__ import annotations

from ...ir.graph import Graph
from ...tensor import ops as T
from .instance import loops_of


def _unit_last_reshape(u):
    """``a`` when ``u = reshape(a, a.shape + (1,))``, else None."""
    op = u.defining_op
    if not isinstance(op, T.ReshapeOp):
        return None
    a = op.operand(0)
    return a if tuple(u.type.shape) == tuple(a.type.shape) + (1,) else None


def _last_axis_untiled(plan) -> bool:
    if not plan.f_dims or plan.order[-1] != plan.f_dims[-1]:
        return False
    return all(lp.dim != plan.f_dims[-1] for lp in loops_of(plan))


def plan_interleaved_concats(ctx, graph: Graph, producers: set, outputs: set, part, plans) -> None:
    """Give the two parts of each interleaving stack their strided slice of its home (see the
    module docstring) when one group computes both and nothing else reads them."""
    for op in graph.body:
        if not isinstance(op, T.ConcatOp) or op.num_operands != 2:
            continue
        v = op.result
        if op.attrs["axis"] != v.type.rank - 1 or v.type.shape[-1] != 2:
            continue
        parts = [_unit_last_reshape(u) for u in op.operands]
        if any(a is None for a in parts) or parts[0] is parts[1]:
            continue
        groups = {part.group_of.get(a.defining_op) for a in parts}
        if len(groups) != 1 or None in groups:
            continue
        (g,) = groups
        plan = plans.get(g)  # (plan, row bytes)
        if plan is None or not _last_axis_untiled(plan[0]):
            continue
        if any(
            a not in producers
            or a in ctx.homes
            or a.num_uses != 1
            or a in outputs
            or u.num_uses != 1
            or a.type.dtype is not v.type.dtype
            for a, u in zip(parts, op.operands)
        ):
            continue
        h = ctx.home_for_store(v)
        for k, (a, u) in enumerate(zip(parts, op.operands)):
            hu = h.sub(v.type.rank - 1, k, 1)
            ctx.homes[u] = hu
            ha = hu.reshape(a.type.shape)
            if ha is None:
                raise AssertionError("lowering bug: a unit-dim reshape is a view")
            ctx.homes[a] = ha
