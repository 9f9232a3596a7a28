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
domain) whose partition dims hold whole rows on at most half the partitions, with no free-dim
chunking and no other free dim of more than one element. Every stored value must span the last
dim; an input either spans it or is broadcast along it (a per-row column ``(8, 1)``: read with a
stride-0 dim over the row's chunks). Rows short enough that an instruction over a whole row
costs VectorE's minimum initiation interval anyway (``min_row``) stay whole: splitting them gains
nothing and would keep the next item (a topk, a matmul) from reading the group's tile in place
(onchip_rows.py).
"""

from __future__ import annotations

from ...tensor import ops as T
from .plan import GroupPlan


def min_row(target) -> int:
    """Row length (elements) at or below which an instruction over a whole row costs VectorE's
    MIN_II anyway, even at its fastest perf mode: splitting such rows gains nothing."""
    return target.min_ii_cycles * target.vector_perf_mode_sbuf_factor


def split_long_rows(
    plan: GroupPlan, group, partitions: int, input_exts, store_exts, shortest: int = 0
) -> GroupPlan:
    """``plan`` with its last free dim split over the idle partitions (module docstring), or
    ``plan`` unchanged when that does not apply, would gain less than a factor of two in rows,
    or the row holds at most ``shortest`` elements (``min_row``). ``input_exts`` /
    ``store_exts``: extents (aligned to the group's domain) of the values the group loads and
    stores."""
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
    if n <= shortest:
        return plan
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
