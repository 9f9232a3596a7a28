"""Scalar-engine instruction: activation, dst = op(data * scale + bias) with an optional add-reduce."""

from __future__ import annotations

import numpy as np

from . import enums as E
from .errors import NkiSimError
from .isa_vector import fp32_operand, reduce_into
from .operands import Instruction, begin, rows, same_free_dims, scalar_or_column, tile_arg
from .operators import ActivationFunction, add
from .storage import round_to


def activation(
    dst,
    op,
    data,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=E.reduce_cmd.idle,
    name="",
):
    """dst = op(data * scale + bias) on ScalarE in fp32; reduce_cmd folds row sums into registers."""
    where = "nisa.activation"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    data = tile_arg(data, where, "data")
    if not isinstance(op, ActivationFunction):
        raise NkiSimError(f"{where}: op must be an activation function token such as nl.exp, got {op!r}")
    same_free_dims(where, "dst", dst, data=data)
    p = data.shape[0]
    s = fp32_operand(scale, p, where, "scale")
    x = np.asarray(rows(data, where, "data") * s, np.float32)
    if bias is not None:
        x = np.asarray(x + scalar_or_column(bias, p, where, "bias"), np.float32)
    y = op.apply(x, where)
    dst.write(round_to(y, dst.dtype).reshape(dst.shape), where)
    run.count(E.engine.scalar.name)
    if reduce_op is None and reduce_res is None and reduce_cmd is E.reduce_cmd.idle:
        return Instruction(where)
    reduce_into(
        run.scalar_acc,
        where,
        reduce_cmd,
        add if reduce_op is None else reduce_op,
        (add,),
        y,
        data.partition_start,
        reduce_res,
    )
    if reduce_res is not None:
        run.count(E.engine.scalar.name)
    return Instruction(where)
