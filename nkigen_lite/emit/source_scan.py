"""NKI-source rule of ``nki.tensor_tensor_scan`` (nki/ops/scan.py): ``nisa.tensor_tensor_scan``
(NKI 0.6 signature: dst, data0, data1, initial, op0, op1, reverse0, reverse1)."""

from __future__ import annotations

from ..nki import ops as K
from .source_rules import rule


@rule(K.TensorTensorScanOp, "nisa.tensor_tensor_scan")
def _tensor_tensor_scan(e, op) -> None:
    args = [
        ("dst", e.access(op, "dst")),
        ("data0", e.access(op, "data0")),
        ("data1", e.access(op, "data1")),
        ("initial", e.operand(op, "initial")),
        ("op0", f"nl.{op.attrs['op0']}"),
        ("op1", f"nl.{op.attrs['op1']}"),
    ]
    for name in ("reverse0", "reverse1"):
        if op.attrs[name]:
            args.append((name, "True"))
    e.call("nisa.tensor_tensor_scan", args)
