"""Kernel Builder rule of ``nki.tensor_tensor_scan`` (nki/ops/scan.py). No public Kernel Builder
reference documents it: the name and keywords follow ``nki.isa`` (kb_table.py marks it
assumed), checked only against the recording stand-in (tests/emit/kb_standin.py)."""

from __future__ import annotations

from ..nki import ops as K
from . import kb_table as T
from .kb_rules import rule


@rule(K.TensorTensorScanOp)
def _tensor_tensor_scan(w, op) -> None:
    w.isa_call(
        T.TENSOR_TENSOR_SCAN,
        dst=w.access(op, "dst"),
        data0=w.access(op, "data0"),
        data1=w.access(op, "data1"),
        initial=w.operand(op, "initial"),
        op0=w.alu(op.attrs["op0"]),
        op1=w.alu(op.attrs["op1"]),
        reverse0=bool(op.attrs["reverse0"]),
        reverse1=bool(op.attrs["reverse1"]),
    )
