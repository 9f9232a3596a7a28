"""Centred values that are never materialised: ``c = y - m`` with ``m`` a per-partition column
(a row mean, a row max), read only by

- activations ``f(c)``, which take ``-m`` as their bias: ``f(y·1 + (-m))``, and
- multiplies ``c · r`` by a per-partition column or an immediate (``(x - mean) · rstd`` of a
  layernorm), each one VectorE ``tensor_scalar(y, subtract m, multiply r)``.

Without this the subtraction is a full pass over the tile on its own (LayerNorm: one VectorE
instruction per row tile of its four, the one the next two read). Results are unchanged bit for
bit: the engines compute in fp32 and ``c`` is fp32 (``y + (-m)`` is ``y - m`` exactly), and the
two-op tensor_scalar rounds ``y - m`` to fp32 before the multiply, as the separate instructions
did. Only fp32 ``c`` is centred this way (a narrower ``c`` would be rounded to its dtype
between the two ops).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.op import Op
from ...ir.value import Value
from ...tensor import ops as T
from .frame import TileFrame, immediate_of
from .tile_common import ACT_FUNC


@dataclass(frozen=True)
class CentredMul:
    """``(data - mean) * factor`` as one two-op tensor_scalar: ``factor`` a per-partition
    column (Value) or an immediate."""

    data: Value
    mean: Value
    factor: Value | float

    def operands(self) -> list[Value]:
        out = [self.data, self.mean]
        if isinstance(self.factor, Value):
            out.append(self.factor)
        return out


def _column(em: TileFrame, v: Value, like: Value) -> bool:
    """``v`` is a float per-partition column beside the full value ``like``."""
    return (
        immediate_of(v) is None
        and (v.defining_op is not None or v in em.ctx.homes)
        and v.type.dtype.is_float
        and em.per_partition(v)
        and not em.per_partition(like)
    )


def _centred_sub(em: TileFrame, op: Op) -> bool:
    """``op`` is ``y - m``: fp32, y a full tile of the result's extent, m a column; private to
    the group (not stored, not passed on, not held in a resident row)."""
    if not isinstance(op, T.SubOp) or op.result.type.dtype.name != "f32":
        return False
    v = op.result
    y, m = op.operands
    if v in em.keep or v in em.resident or v in em.resident_values or immediate_of(y) is not None:
        return False
    return em.ext(y) == em.ext(v) and _column(em, m, v)


def _activation_use(em: TileFrame, use: Op) -> bool:
    func = ACT_FUNC.get(type(use))
    return (
        func is not None
        and func != "copy"
        and not isinstance(use, T.NegOp)
        and use in em.members
        and use.result.type.dtype.is_float
    )


def _mul_use(em: TileFrame, use: Op, v: Value) -> CentredMul | None:
    if not isinstance(use, T.MulOp) or use not in em.members or use.result.type.dtype.name != "f32":
        return None
    a, b = use.operands
    if a is b:
        return None
    r = b if a is v else a
    if em.ext(use.result) != em.ext(v):
        return None
    sub = v.defining_op
    k = immediate_of(r)
    if k is not None:
        return CentredMul(sub.operand(0), sub.operand(1), float(k))
    if _column(em, r, v):
        return CentredMul(sub.operand(0), sub.operand(1), r)
    return None


def plan_centred(em: TileFrame, fp) -> None:
    """Record in the fold plan ``fp`` every centred subtraction whose uses all absorb it (and at
    least one is a multiply, or there are several: a single activation use is the activation
    fold's own case)."""
    for op in em.g.ops:
        if op in fp.folded or not _centred_sub(em, op):
            continue
        v = op.result
        uses = [u.op for u in v.uses]
        muls: dict = {}
        ok = bool(uses)
        for use in uses:
            if _activation_use(em, use) and use.operand(0) is v:
                continue
            cm = _mul_use(em, use, v)
            if cm is None or use in fp.folded:
                ok = False
                break
            muls[use] = cm
        if not ok or (not muls and len(uses) < 2):
            continue
        fp.centred.update(muls)
        fp.centred_subs.add(op)
        fp.folded.add(op)
