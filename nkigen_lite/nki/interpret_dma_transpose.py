"""Interpreter rule of ``nki.dma_transpose`` (ops/dma_transpose.py): ``dst`` receives
``np.transpose(src, axes of the rank)``, bit-exact (one dtype on both sides, verified)."""

from __future__ import annotations

import numpy as np

from . import ops
from .interpret import NkiInterpreter as I
from .ops.dma_transpose import DMA_TRANSPOSE_AXES


@I.impl(ops.DmaTransposeOp)
def _dma_transpose(it, op, args):
    src = np.asarray(it.read_access(op, "src", args))
    axes = DMA_TRANSPOSE_AXES.get(src.ndim)
    if axes is None or op.access("src").dtype is not op.access("dst").dtype:
        raise it.fail(
            op, f"dma_transpose of a rank-{src.ndim} {op.access('src').dtype} source has no documented form"
        )
    out = np.transpose(src, axes)
    if out.shape != tuple(op.access("dst").shape):
        raise it.fail(
            op, f"dma_transpose dst {list(op.access('dst').shape)} is not src permuted: {list(out.shape)}"
        )
    it.write_access(op, "dst", args, out.reshape(-1))
