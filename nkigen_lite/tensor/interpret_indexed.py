"""Tensor interpreter rules of the indexed ops (tensor/ops/indexed.py): values are moved, not
computed (one_hot declares its 0/1 values in its dtype); an index out of range is one
IndexOutOfRange (an InterpretError) naming the op, the index, its position and the bound."""

from __future__ import annotations

from ..ir.errors import IndexOutOfRange
from . import ops as T
from .index_bounds import explain_flat
from .interpret import TensorInterpreter as I


def _call(op, fn, *args, env=None, **kw):
    try:
        return fn(*args, **kw)
    except IndexError as e:
        text = str(e) if str(e).startswith(op.name) else f"{op.name}: {e}"
        text = (explain_flat(op, env) if env is not None else None) or text
        at = f" at {op.loc}" if isinstance(op.loc, str) and op.loc else ""
        raise IndexOutOfRange(text + at) from None


@I.impl(T.GatherRowsOp)
def _gather_rows(it, op, args):
    return [_call(op, op.reference, args[0], args[1], env=it.env)]


@I.impl(T.ScatterRowsOp)
def _scatter_rows(it, op, args):
    return [_call(op, op.reference, args[0], args[1], args[2], env=it.env)]


@I.impl(T.TakeAlongAxisOp)
def _take_along_axis(_it, op, args):
    return [_call(op, op.reference, args[0], args[1], op.attrs["axis"])]


@I.impl(T.OneHotOp)
def _one_hot(it, op, args):
    dt = op.attrs["dtype"]
    return [it.declare(op.reference(args[0], op.attrs["depth"], it.compute_type(dt)), dt)]


@I.impl(T.DynamicSliceOp)
def _dynamic_slice(_it, op, args):
    return [_call(op, op.reference, args[0], *args[1:], sizes=op.attrs["sizes"]).copy()]


@I.impl(T.DynamicUpdateSliceOp)
def _dynamic_update_slice(_it, op, args):
    return [_call(op, op.reference, args[0], args[1], *args[2:])]
