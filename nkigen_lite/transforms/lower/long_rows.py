"""Few long rows of an element-wise fusion group spread over all the partitions.

A decode-sized element-wise chain such as gpt-oss's clamped SwiGLU on ``(8, 1440)`` puts its 8
rows on 8 of the 128 partitions: every VectorE / ScalarE instruction then streams 1,440
elements per partition, 16 times what the other 120 partitions could share. Element-wise ops do
not care which elements share a row, so the group's last free dim of ``n`` elements is split as
``(n / q, q)``: the ``n / q`` chunks join the rows on the partitions (a row of 1,440 becomes 16
partitions of 90) and each partition keeps ``q`` contiguous elements. Loads and stores are views
of the same HBM homes (partition ``r · n/q + j`` reads row ``r``'s elements ``j·q .. j·q+q``);
an input broadcast along the rows (a per-column vector) is read with a stride-0 row dim.

Only for groups of element-wise ops (no reductions or iotas, whose axes are dims of the unsplit
domain), one partition dim of whole rows, no free-dim chunking, and rows whose last free dim is
read by every input and stored by every output (an input broadcast along it, such as a per-row
column ``(8, 1)``, would need its values replicated over the new partitions: left alone).
"""

from __future__ import annotations

from ...tensor import ops as T
from .plan import GroupPlan


def split_long_rows(plan: GroupPlan, group, partitions: int, input_exts, store_exts) -> GroupPlan:
    """``plan`` with its last free dim split over the idle partitions (module docstring), or
    ``plan`` unchanged when that does not apply or gains less than a factor of two in rows.
    ``input_exts`` / ``store_exts``: extents (aligned to the group's domain) of the values the
    group loads and stores."""
    dom = plan.domain
    if (
        plan.split is not None
        or plan.f_chunk is not None
        or not plan.p_dims
        or any(isinstance(op, (T.ReduceOp, T.IotaOp)) for op in group.ops)
    ):
        return plan
    rows = plan.rows
    if plan.p_chunk != dom[plan.p_dims[0]] or 2 * rows > partitions:
        return plan  # rows chunked over tiles, or at least half the partitions used already
    d = len(dom) - 1
    if plan.roles[d] != "F" or any(dom[f] > 1 for f in plan.f_dims if f != d):
        return plan
    n = dom[d]
    if any(ext[d] != n for ext in store_exts) or any(ext[d] not in (1, n) for ext in input_exts):
        return plan
    # the most chunks per row that fit the partitions and divide the row evenly
    chunks = next((c for c in range(partitions // rows, 1, -1) if n % c == 0), 1)
    if chunks == 1:
        return plan
    return GroupPlan(
        dom[:d] + (chunks, n // chunks),
        tuple(plan.roles[:d]) + ("P", "F"),
        plan.i_dims,
        plan.p_dims + (d,),
        tuple(f for f in plan.f_dims if f != d) + (d + 1,),
        plan.p_chunk,
        None,
        (),
        (d, n // chunks),
    )
