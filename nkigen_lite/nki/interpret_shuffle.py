"""Interpreter rule of ``nki.stream_shuffle`` (ops/shuffle.py): per quadrant of 32 partitions,
dst partition i takes src partition mask[i], bit for bit."""

from __future__ import annotations

import numpy as np

from . import ops
from .interpret import NkiInterpreter as I


def shuffled(x: np.ndarray, mask, quadrant: int = 32) -> np.ndarray:
    """``x`` (partitions first) with, in each quadrant, row i taken from row mask[i]."""
    idx = np.array([q + m for q in range(0, x.shape[0], quadrant) for m in mask])
    return x[idx]


@I.impl(ops.StreamShuffleOp)
def _stream_shuffle(it: I, op, args):
    x = np.asarray(it.read_access(op, "src", args))
    it.write_access(op, "dst", args, shuffled(x, op.attrs["mask"], it.target.partition_quadrant))
