"""Online max-and-sum: a running row max ``m`` and the sum of ``exp(x - m)`` over the same row,
both accumulated over free-dim chunks in one pass (softmax, log_softmax and logsumexp over rows
wider than SBUF).

Per chunk: ``m' = max(m, max(chunk))``, ``c = exp(m - m')``, ``s = s·c + sum(exp(chunk - m'))``,
``m = m'``; the chunk's ``x - m`` reads the running max. After the chunks ``m`` is the row max
and ``s`` the sum of ``exp(x - m)``, so the group that normalises reads the input once more:
softmax over 151,936 columns reads its input twice and writes once (1.5× the minimum traffic).

``running_sum_of`` recognises the pattern on the tensor graph (group formation lets the chain
``x - m``, ``exp``, ``sum`` join the max's group although the max is only complete after the
loops); ``combine_running_max`` / ``rescale_running_sum`` emit the per-chunk updates.
"""

from __future__ import annotations

from ...ir.op import Op
from ...nki.types import Access
from ...tensor import ops as T


def _only_use(op: Op) -> Op | None:
    uses = op.result.uses
    return uses[0].op if len(uses) == 1 else None


def running_sum_of(m: Op, sub: Op, accumulating) -> Op | None:
    """The accumulating sum ``s = sum(exp(x - m))`` when ``sub`` is ``x - m`` for the
    accumulating row max ``m = max(x)`` over the last axis and feeds only that exp, which feeds
    only ``s`` (over the same axis); else None. ``accumulating(op)``: op accumulates over
    chunks."""
    if not (isinstance(m, T.ReduceOp) and isinstance(sub, T.SubOp) and accumulating(m)):
        return None
    x = m.operand(0)
    last = [x.type.rank - 1]
    if m.attrs["kind"] != "max" or list(m.attrs["axes"]) != last or not m.attrs["keepdims"]:
        return None
    if sub.operand(0) is not x or sub.operand(1) is not m.result or not x.type.dtype.is_float:
        return None
    e = _only_use(sub)
    if not isinstance(e, T.ExpOp):
        return None
    s = _only_use(e)
    if not (isinstance(s, T.ReduceOp) and accumulating(s)):
        return None
    if s.attrs["kind"] != "sum" or list(s.attrs["axes"]) != last or not s.attrs["keepdims"]:
        return None
    return s


def reads_running_max(d: Op, op: Op, accumulating) -> bool:
    """True when ``op`` may join the group of the accumulating reduction ``d`` although ``d``
    is only complete after the loops: ``op`` is ``x - d`` of an online max-and-sum."""
    return running_sum_of(d, op, accumulating) is not None


def online_pairs(ops: list[Op], accumulating: list[Op]) -> dict[Op, Op]:
    """Running max -> running sum for the online pairs among a group's ``ops``."""
    members = set(ops)
    acc = set(accumulating)
    pairs = {}
    for m in accumulating:
        for u in m.result.uses:
            if u.op in members:
                s = running_sum_of(m, u.op, acc.__contains__)
                if s is not None and s in members:
                    pairs[m] = s
    return pairs


def combine_running_max(em, m: Op, acc: Access, part: Access, inst) -> Access:
    """``acc = max(acc, part)``; returns the rescale factor ``exp(old acc - new acc)`` (a
    scratch column) and makes ``m``'s tile the running max for the rest of the chunk."""
    new = em.tile_access(em.scratch_tile(m.result, inst, "f32"), inst, em.ext(m.result))
    em.b.tensor_tensor(dst=new, data1=acc, data2=part, op="maximum")
    corr = em.tile_access(em.scratch_tile(m.result, inst, "f32"), inst, em.ext(m.result))
    em.b.tensor_tensor(dst=corr, data1=acc, data2=new, op="subtract")
    em.b.activation(dst=corr, op="exp", data=corr)
    em.b.tensor_copy(dst=acc, src=new)
    if m in em.fold.negated:  # x - m folded into an activation bias: the tile holds -m
        em.new_tile(m.result, inst, "f32")
        em.b.tensor_scalar(dst=em.access(m.result, inst), data=acc, op0="multiply", operand0=-1.0)
    else:
        em.tiles[m.result] = acc.tensor
    return corr


def rescale_running_sum(em, acc: Access, corr: Access) -> None:
    """``acc = acc · corr`` before a chunk's sum is added (its terms used the new max)."""
    em.b.tensor_tensor(dst=acc, data1=acc, data2=corr, op="multiply")
