"""Interpreter rule of ``nki.tensor_tensor_scan`` (ops/scan.py): the documented recurrence,
per partition over the free elements in access order, in fp32 (every step rounded to fp32, the
Vector engine's arithmetic)."""

from __future__ import annotations

import numpy as np

from . import numerics, ops
from .interpret import NkiInterpreter as I
from .interpret_compute import _load, _operand

F32 = np.dtype(np.float32)


def scan_rows(d0: np.ndarray, d1: np.ndarray, init: np.ndarray, op0: str, op1: str, rev0: bool, rev1: bool):
    """The scan of the (P, N) fp32 arrays ``d0`` and ``d1`` from ``init`` ((P,) or a scalar)."""
    out = np.empty(d1.shape, F32)
    r = np.broadcast_to(np.asarray(init, F32), (d1.shape[0],))
    for i in range(d1.shape[1]):
        t = numerics.alu(op0, r, d0[:, i], F32) if rev0 else numerics.alu(op0, d0[:, i], r, F32)
        r = numerics.alu(op1, d1[:, i], t, F32) if rev1 else numerics.alu(op1, t, d1[:, i], F32)
        out[:, i] = r
    return out


@I.impl(ops.TensorTensorScanOp)
def _tensor_tensor_scan(it: I, op, args):
    d0 = _load(it, op, "data0", args, False)
    d1 = _load(it, op, "data1", args, False)
    init = _operand(it, op, "initial", args, False).reshape(-1)
    a = op.attrs
    it.write_access(
        op, "dst", args, scan_rows(d0, d1, init, a["op0"], a["op1"], a["reverse0"], a["reverse1"])
    )
