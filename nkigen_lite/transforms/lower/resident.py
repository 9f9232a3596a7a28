"""Weights resident for a whole row pipeline (layer-scale weight reuse).

In a row pipeline over sequence tiles every matmul streams its B operand (the weights) once
per row tile. A weight that fits SBUF beside the pipeline's own tiles is instead loaded once,
before the loop nest, and every row tile reads it on chip: its HBM traffic drops from
``rows / 128`` reads to one. The pipeline is first emitted with streamed weights and its SBUF
peak measured on the emitted ops (``region_peak``: tiles live from their alloc to their last
use, as the deallocs pass frees them); the room is the partition's SBUF minus that peak and
``MARGIN_BYTES``. The weights kept are the subset that saves the most HBM bytes within the room
(exhaustive over the few matmuls of one pipeline, greedy by saving beyond
``EXHAUSTIVE_LIMIT``); when any is kept the pipeline is emitted again with them. Rotation
(rotation.py) then doubles only what still fits, so resident weights win over second buffers.
"""

from __future__ import annotations

from itertools import combinations

from ...nki.ops import AllocOp
from ...nki.types import MemorySpace, TileType

EXHAUSTIVE_LIMIT = 8  # matmuls per pipeline searched exhaustively (2^8 subsets)
MARGIN_BYTES = 8192  # per partition, for tiles the member estimates do not name (PSUM copies)


def choose_resident(emitters: list, used_bytes: int, sbuf_bytes: int) -> list:
    """The matmul emitters whose B should stay resident, given the pipeline's SBUF peak
    ``used_bytes`` per partition with every weight streamed."""
    room = sbuf_bytes - used_bytes - MARGIN_BYTES
    cands = []
    for em in emitters:
        size = em.resident_bytes()
        if size is not None and size <= room:
            cands.append((em, size, em.b_bytes() * (em.resident_reuse() - 1)))
    best: tuple = (0, ())
    if len(cands) <= EXHAUSTIVE_LIMIT:
        for r in range(1, len(cands) + 1):
            for combo in combinations(cands, r):
                if sum(c[1] for c in combo) <= room:
                    saved = sum(c[2] for c in combo)
                    if saved > best[0]:
                        best = (saved, combo)
    else:
        used, combo = 0, []
        for c in sorted(cands, key=lambda c: -c[2]):
            if used + c[1] <= room:
                used += c[1]
                combo.append(c)
        best = (0, tuple(combo))
    return [c[0] for c in best[1]]


def _sbuf_bytes(v) -> int:
    t = v.type
    if not isinstance(t, TileType) or t.space is not MemorySpace.SBUF:
        return 0
    return t.bytes_per_partition * v.defining_op.bufs


def _peak(ops: list, live: int, freed: dict | None = None) -> int:
    """Peak SBUF bytes per partition over ``ops`` (one block) starting from ``live``; ``freed``:
    more bytes of ``live`` freed after op i."""
    allocated = {op.result for op in ops if isinstance(op, AllocOp) and _sbuf_bytes(op.result)}
    last: dict = {}
    for i, op in enumerate(ops):
        for inner in op.walk():
            for v in inner.operands:
                if v in allocated:
                    last[v] = i
    frees: dict[int, int] = dict(freed or {})
    for v in allocated:
        i = last.get(v, ops.index(v.defining_op))
        frees[i] = frees.get(i, 0) + _sbuf_bytes(v)
    peak = live
    for i, op in enumerate(ops):
        if isinstance(op, AllocOp) and op.result in allocated:
            live += _sbuf_bytes(op.result)
        peak = max(peak, live)
        for r in op.regions:
            for b in r.blocks:
                peak = max(peak, _peak(list(b), live))
        live -= frees.get(i, 0)
    return peak


def region_peak(first, transient=()) -> int:
    """Peak SBUF bytes per partition of ``first`` and the ops after it in its block, counting the
    tiles allocated before them that they use as live throughout — but those in ``transient``
    (tiles nothing reads after this region: attention_out.py's) only up to their last use."""
    ops = []
    op = first
    while op is not None:
        ops.append(op)
        op = op.next_op
    inside = {r for op in ops for inner in op.walk() for r in inner.results}
    outside = {v for op in ops for inner in op.walk() for v in inner.operands if v not in inside}
    outside = {v for v in outside if isinstance(v.defining_op, AllocOp)}
    gone = {id(v): v for v in outside if any(v is t for t in transient)}
    last: dict[int, int] = {}
    for i, op in enumerate(ops):
        for inner in op.walk():
            for x in inner.operands:
                if id(x) in gone:
                    last[id(x)] = i
    freed: dict[int, int] = {}
    for k, i in last.items():
        freed[i] = freed.get(i, 0) + _sbuf_bytes(gone[k])
    return _peak(ops, sum(_sbuf_bytes(v) for v in outside), freed)


def erase_from(block, first) -> None:
    """Erase the ops of ``block`` from ``first`` on (nested ops included), last first."""
    ops = []
    op = first
    while op is not None:
        ops.append(op)
        op = op.next_op
    for op in reversed(ops):
        for inner in reversed(list(op.walk())):
            inner.drop_operand_uses()
        block.remove(op)
