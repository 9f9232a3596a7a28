"""The documented lowering of ``where`` (and of other selects) onto ``nisa.select_reduce``.

select_reduce (NKI 0.6) takes an int8/uint8/int16/uint16 predicate, an ``on_true`` tile of any
dtype but tfloat32/int32/uint32, and an ``on_false`` that is an fp32 scalar or a (P, 1) vector;
it computes in fp32. So (docs/lowering.md, "where"):

- bool predicates are copied into a uint8 tile (bool is not a listed predicate dtype);
- on_false an immediate or a per-partition column: one select;
- on_false a full tile: a blend of two selects, ``dst = select(p, a, -0.0)`` and
  ``t = select(not p, f, -0.0)``, then ``dst = dst + t`` — exact for every value including
  inf, NaN and signed zeros, because ``x + (-0.0) == x`` bit for bit;
- int32 / uint32 results (which select_reduce cannot carry exactly through fp32) use bit masks
  on the Vector engine: ``m = -p`` (all ones or zero), ``dst = f ^ ((a ^ f) & m)``;
- other on_true tiles of an excluded dtype (int32 feeding a float result, tfloat32) are copied
  to fp32 first (the result rounds them anyway).
"""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...nki.types import Access
from ...nki.verify_ops import SELECT_ON_TRUE_EXCLUDED, SELECT_PREDICATE_DTYPES
from ...tensor import ops as T
from .frame import TileFrame
from .rules import tile_rule
from .tile_common import Imm, arg, scratch

BITMASK_DTYPES = ("i32", "u32")


def predicate_tile(em: TileFrame, v, inst, c: Access) -> Access:
    """``c`` as a documented select predicate (a uint8 copy of a bool tile)."""
    if c.dtype.name in SELECT_PREDICATE_DTYPES:
        return c
    p = scratch(em, v, inst, "u8")
    em.b.tensor_copy(dst=p, src=c)
    return p


def _on_true_tile(em: TileFrame, v, inst, a: Access) -> Access:
    if a.dtype.name not in SELECT_ON_TRUE_EXCLUDED:
        return a
    t = scratch(em, v, inst, "f32")
    em.b.tensor_copy(dst=t, src=a)
    return t


def _is_column_of(col: Access, dst: Access) -> bool:
    return (
        col.free_size == 1 and col.partitions == dst.partitions and col.dims[0].offset == dst.dims[0].offset
    )


def select_into(em: TileFrame, v, inst, dst: Access, pred: Access, on_true: Access, on_false) -> None:
    """dst = pred ? on_true : on_false for a float / narrow-integer ``dst``; ``pred`` is a
    documented predicate tile, ``on_false`` an Imm, a (P, 1) column or a full tile access."""
    on_true = _on_true_tile(em, v, inst, on_true)
    if isinstance(on_false, Imm):
        with np.errstate(over="ignore"):
            value = float(np.float32(on_false.value))
        em.b.select(dst=dst, predicate=pred, on_true=on_true, on_false=value)
        return
    if _is_column_of(on_false, dst):
        em.b.select(dst=dst, predicate=pred, on_true=on_true, on_false=on_false)
        return
    em.b.select(dst=dst, predicate=pred, on_true=on_true, on_false=-0.0)
    rest = scratch(em, v, inst, v.type.dtype)
    em.b.select(
        dst=rest,
        predicate=pred,
        on_true=_on_true_tile(em, v, inst, on_false),
        on_false=-0.0,
        reverse_pred=True,
    )
    em.b.tensor_tensor(dst=dst, data1=dst, data2=rest, op="add")


def _bits(x: Imm, v) -> int:
    """An integer immediate as the signed 32-bit pattern of its value in v's dtype."""
    return int(np.array(x.value).astype(v.type.dtype.np_dtype).view(np.int32))


def _in_dtype(em: TileFrame, v, inst, x):
    if isinstance(x, Imm) or x.dtype is v.type.dtype:
        return x
    t = scratch(em, v, inst, v.type.dtype)
    em.b.tensor_copy(dst=t, src=x)
    return t


def _bitmask_where(em: TileFrame, v, inst, dst: Access, c: Access, a, f) -> None:
    """dst = f ^ ((a ^ f) & m) with m = -c: exact for every int32 / uint32 value."""
    b = em.b
    m = scratch(em, v, inst, "i32")
    b.tensor_scalar(dst=m, data=c, op0="multiply", operand0=-1.0)
    a, f = _in_dtype(em, v, inst, a), _in_dtype(em, v, inst, f)
    y = scratch(em, v, inst, v.type.dtype)
    if isinstance(a, Imm) and isinstance(f, Imm):
        b.tensor_scalar(dst=y, data=m, op0="bitwise_and", operand0=_bits(a, v) ^ _bits(f, v))
    else:
        x = scratch(em, v, inst, v.type.dtype)
        if isinstance(a, Imm) or isinstance(f, Imm):
            tile, imm = (f, a) if isinstance(a, Imm) else (a, f)
            b.tensor_scalar(dst=x, data=tile, op0="bitwise_xor", operand0=_bits(imm, v))
        else:
            b.tensor_tensor(dst=x, data1=a, data2=f, op="bitwise_xor")
        b.tensor_tensor(dst=y, data1=x, data2=m, op="bitwise_and")
    if isinstance(f, Imm):
        b.tensor_scalar(dst=dst, data=y, op0="bitwise_xor", operand0=_bits(f, v))
    else:
        b.tensor_tensor(dst=dst, data1=y, data2=f, op="bitwise_xor")


@tile_rule(T.WhereOp)
def lower_where(em: TileFrame, op: Op, inst) -> None:
    """tensor.where on tiles (see the module docstring)."""
    v = op.result
    ve = em.ext(v)
    c, a, f = (arg(em, u, inst, ve) for u in op.operands)
    em.new_tile(v, inst)
    dst = em.access(v, inst)
    if isinstance(c, Imm):
        pick = a if c.value else f
        if isinstance(pick, Imm):
            return em.b.memset(dst=dst, value=v.type.dtype.python_value(pick.value))
        return em.b.tensor_copy(dst=dst, src=pick)
    if v.type.dtype.name in BITMASK_DTYPES:
        return _bitmask_where(em, v, inst, dst, c, a, f)
    if isinstance(a, Imm):
        t = scratch(em, v, inst, v.type.dtype)
        em.b.memset(dst=t, value=v.type.dtype.python_value(a.value))
        a = t
    if not isinstance(f, Imm) and em.per_partition(op.operand(2)):
        col = em.access(op.operand(2), inst)  # a (P, 1) on_false column when it lines up
        f = col if _is_column_of(col, dst) else f
    select_into(em, v, inst, dst, predicate_tile(em, v, inst, c), a, f)
