"""HBM bytes per kernel tensor: what each DMA reads from and writes to every kernel input
(through HBM views), trip counts included; DMAs through HBM scratch buffers."""

from __future__ import annotations

from nkigen_lite.nki.ops import DmaCopyOp, DmaGatherOp, DmaScatterOp, ForiLoopOp, HbmViewOp
from nkigen_lite.nki.types import HbmType


def hbm_bytes_by_input(kern) -> tuple[dict[str, int], dict[str, int]]:
    """``(read, written)``: bytes DMAs move out of / into each kernel input's buffer (an
    indirect DMA counts the rows it moves, not the table)."""
    g = kern.nki
    names = {v: n for n, v in zip(g.input_names, g.inputs)}
    read, written = dict.fromkeys(names.values(), 0), dict.fromkeys(names.values(), 0)

    def root(v):
        while isinstance(v.defining_op, HbmViewOp):
            v = v.defining_op.operand(0)
        return v

    def walk(block, mult):
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.body, mult * op.trip_count)
            elif isinstance(op, DmaCopyOp):
                n = mult * op.moved.size * op.moved.dtype.itemsize
                for side, acc in (("src", read), ("dst", written)):
                    r = root(op.access(side).tensor)
                    if r in names:
                        acc[names[r]] += n

    walk(g.body, 1)
    return read, written


def scratch_dmas(kern) -> tuple[int, int]:
    """(count, bytes) of the DMAs touching an HBM buffer that is neither a kernel input nor an
    output (scratch), each counted once; loops count per static instruction."""
    g = kern.nki
    io = set(g.inputs) | set(g.outputs.values())

    n = b = 0
    for op in g.body.walk():
        if not isinstance(op, (DmaCopyOp, DmaGatherOp, DmaScatterOp)):
            continue
        accs = [op.access(a) for a, _ in op.access_attrs()]
        if any(
            a is not None and isinstance(a.tensor.type, HbmType) and _root(a.tensor) not in io for a in accs
        ):
            n += 1
            b += op.moved.size * op.moved.dtype.itemsize
    return n, b


def _root(v):
    while isinstance(v.defining_op, HbmViewOp):
        v = v.defining_op.operand(0)
    return v
