"""Vector-engine scan: ``nisa.tensor_tensor_scan`` [ISA].

Per partition, over the free elements in order: ``r[0] = op1(op0(data0[0], initial), data1[0])``,
``r[i] = op1(op0(data0[i], r[i-1]), data1[i])`` (``reverse0`` / ``reverse1`` swap an op's
inputs), in fp32. ``initial`` is a float32 scalar or a float32 (P, 1) tile. Refused beyond the
page (stricter): a dst other than float32 (whether the carried value is rounded to a narrower
dst is undocumented).
"""

from __future__ import annotations

import numpy as np

from .errors import NkiSimError
from .isa_vector import alu_op, fp32_operand
from .operands import Instruction, begin, check_one_psum_input, rows, same_shape, tile_arg

F32 = np.float32


def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=""):
    """dst[:, i] = op1(op0(data0[:, i], dst[:, i-1]), data1[:, i]) from ``initial``."""
    where = "nisa.tensor_tensor_scan"
    run = begin(where, name)
    dst, a, b = (tile_arg(t, where, r) for t, r in ((dst, "dst"), (data0, "data0"), (data1, "data1")))
    ops = [alu_op(op0, where, "op0"), alu_op(op1, where, "op1")]
    for role, o in zip(("op0", "op1"), ops):
        if o.kind != "arith":
            raise NkiSimError(f"{where}: {role} {o!r} must be an arithmetic operator [ISA]")
    same_shape(where, "dst", dst, data0=a, data1=b)
    check_one_psum_input(where, data0=a, data1=b)
    if dst.dtype.numpy_name != "float32":
        raise NkiSimError(
            f"{where}: dst must be float32, got {dst.dtype.numpy_name} (the rounding of the carried "
            "value to a narrower dst is undocumented)"
        )
    p = a.shape[0]
    x0, x1 = rows(a, where, "data0"), rows(b, where, "data1")
    r = np.broadcast_to(np.asarray(fp32_operand(initial, p, where, "initial"), F32).reshape(-1), (p,))
    out = np.empty(x1.shape, F32)
    for i in range(x1.shape[1]):
        t = ops[0].apply(r, x0[:, i]) if reverse0 else ops[0].apply(x0[:, i], r)
        t = np.asarray(t).astype(F32)
        r = ops[1].apply(x1[:, i], t) if reverse1 else ops[1].apply(t, x1[:, i])
        r = np.asarray(r).astype(F32)
        out[:, i] = r
    dst.write(out.reshape(dst.shape), where)
    run.count("vector")
    return Instruction(where)
