"""The Vector engine's scan instruction, ``nki.tensor_tensor_scan``.

``nki.tensor_tensor_scan dst, data0, data1, initial {op0, op1, reverse0, reverse1}``: per
partition, over the free elements in access order, ``r[0] = op1(op0(data0[0], initial),
data1[0])`` and ``r[i] = op1(op0(data0[i], r[i-1]), data1[i])``; ``reverse0`` swaps op0's
inputs, ``reverse1`` op1's. ``initial`` is an fp32 immediate or an fp32 (P, 1) column; the
arithmetic is fp32. With ``data0`` all ones, ``op0 = multiply`` and ``op1 = add`` it is a
prefix sum (cumsum); a 0 in ``data0`` restarts the sum (a segmented scan).

NKI 0.6: ``nisa.tensor_tensor_scan`` (page ``nki.isa.tensor_tensor_scan.html``; docs/nki_rules.md
gives the operand rules the verifier enforces).
"""

from __future__ import annotations

from ...ir.attrs import BOOL, Attr, EnumAttr
from ..access import ACCESS, ACCESS_OR_SCALAR
from .alu import ALU_OPS
from .base import ENGINE_ATTR
from .compute import ComputeOp


class TensorTensorScanOp(ComputeOp):
    """``nki.tensor_tensor_scan dst, data0, data1, initial {op0, op1}``: a per-partition scan
    ``r[i] = op1(op0(data0[i], r[i-1]), data1[i])`` from ``r[-1] = initial``."""

    name = "nki.tensor_tensor_scan"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("data0", ACCESS),
        Attr("data1", ACCESS),
        Attr("initial", ACCESS_OR_SCALAR),
        Attr("op0", EnumAttr(*ALU_OPS)),
        Attr("op1", EnumAttr(*ALU_OPS)),
        Attr("reverse0", BOOL, False),
        Attr("reverse1", BOOL, False),
        ENGINE_ATTR,
    )
    writes = ("dst",)
    engines = ("vector",)


SCAN_OPS = (TensorTensorScanOp,)
