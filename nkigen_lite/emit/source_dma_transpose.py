"""NKI-source rule of ``nki.dma_transpose`` (nki/ops/dma_transpose.py):
``nisa.dma_transpose(dst=, src=, axes=, dge_mode=nisa.dge_mode.hwdge)`` (NKI 0.6 signature,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.dma_transpose.html);
hwdge because the verifier checks the hardware-DGE rules and the cost model charges the
HW-DGE queues."""

from __future__ import annotations

from ..nki import ops as K
from .source_rules import rule


@rule(K.DmaTransposeOp, "nisa.dma_transpose", "nisa.dge_mode")
def _dma_transpose(e, op) -> None:
    e.call(
        "nisa.dma_transpose",
        [
            ("dst", e.access(op, "dst")),
            ("src", e.access(op, "src")),
            ("axes", repr(op.axes)),  # None for an undocumented rank (refused by the verifier)
            ("dge_mode", "nisa.dge_mode.hwdge"),
        ],
    )
