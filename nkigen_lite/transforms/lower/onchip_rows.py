"""Small values stored to HBM scratch and still held in SBUF: later items read the tile.

A fusion group emitted at the kernel's top level (no loop around it) stores each value leaving
it from a tile that nothing overwrites afterwards, and so does a matmul storing all of C from
one tile. When that tile holds the value's row-major image with its leading rows on the
partitions (``rows`` partitions, the rest of the elements in the free dims, in order), the tile
is noted here (``note_stored``) and an item lowered later that wants the value (or a reshape
of it) as ``rows`` rows on the partitions takes the tile (``rows_on_chip``) instead of loading
the scratch buffer back: the ids of the decode step's ``gather_rows`` / ``scatter_rows``
(index arithmetic on ``pos``) and the roped key rows its cache append writes. One that needs
the value whole in another partition layout (a projection's one row as one row per head, the
value rows a cache append writes, ids computed on one partition) copies it SBUF -> SBUF with
one DMA (``relaid_on_chip``, ``GroupEmitter._held``) instead of loading it back (two dependent
DMAs with the store). A scratch buffer that nothing reads in the end is dropped with the stores
into it (``drop_unread_scratch``), so those values never reach HBM. An inlined hand-written
body's whole-input load reads a held tile the same way (``held_inputs``).
"""

from __future__ import annotations

import math

from ...ir.graph import Graph
from ...ir.value import Value
from ...nki.ops import AllocOp, DeallocOp, DmaCopyOp, ForiLoopOp, HbmViewOp, NkiOp
from ...nki.types import Access, HbmType
from ...tensor import ops as T


def note_stored(ctx, v: Value, src: Access, top_level: bool) -> None:
    """Remember that ``src`` (an SBUF access starting at partition 0, rows on the partitions,
    the rest in order in the free dims) holds ``v``'s row-major image, when it was stored at
    the kernel's top level from a whole tile of ``v``'s dtype."""
    t = src.tensor
    if not top_level or t.type.dtype != v.type.dtype or not _at_zero(src.dims[0]):
        return
    if any(d.stride != 1 or not _at_zero(d) or d.size != n for d, n in zip(src.dims[1:], t.type.shape[1:])):
        return
    if src.partitions * src.free_size != v.type.size:
        return
    ctx.on_chip[v] = src


def relaid_on_chip(ctx, v: Value, rows: int) -> Access | None:
    """``v`` as ``rows`` rows on the partitions in SBUF: the held tile itself when it has that
    layout, else (at the kernel's top level) a new ``(rows, size / rows)`` tile filled from the
    held one by one SBUF -> SBUF DMA (made once per value and row count), or None."""
    acc = rows_on_chip(ctx, v, rows)
    if acc is not None:
        return acc
    key = (v, rows)
    if key in ctx.on_chip:
        return ctx.on_chip[key]
    held = rows_on_chip(ctx, v, None)
    size = math.prod(v.type.shape)
    if held is None or len(ctx.b._blocks) != 1 or size % rows or rows > ctx.partitions:
        return None
    t = ctx.b.alloc((rows, size // rows), held.dtype, "sbuf", name="relaid")
    ctx.b.dma_copy(dst=Access.whole(t), src=held)
    ctx.on_chip[key] = Access.whole(t)
    return ctx.on_chip[key]


def _at_zero(d) -> bool:
    return d.offset.is_const and d.offset.const == 0


def rows_on_chip(ctx, v: Value, rows: int | None) -> Access | None:
    """An SBUF access holding ``v`` as ``rows`` rows on the partitions (any number: None),
    row-major, or None; ``v`` may be a reshape (of a reshape ...) of a noted value."""
    size = math.prod(v.type.shape)
    while v not in ctx.on_chip and isinstance(v.defining_op, T.ReshapeOp):
        v = v.defining_op.operand(0)
    acc = ctx.on_chip.get(v)
    if acc is None or (rows is not None and acc.partitions != rows) or acc.size != size:
        return None
    return acc


def held_inputs(ctx, body: Graph, operands) -> tuple[dict, set]:
    """For a hand-written body about to be inlined with inputs bound to ``operands``: the
    tiles it fills by loading a whole input row-major (one top-level ``dma_copy`` into a whole
    2-D ``(rows, cols)`` tile nothing else writes) whose operand an SBUF tile already holds
    that way. Returns (body tile -> the held tile, ids of the body ops to leave out: the
    tile's allocation, load and deallocation)."""
    bound = dict(zip(body.inputs, operands))
    writes: dict = {}
    for op in body.body.walk():
        if isinstance(op, NkiOp):
            for name in op.writes:
                acc = op.access(name)
                if acc is not None:
                    writes[acc.tensor] = writes.get(acc.tensor, 0) + 1
    held, skip = {}, set()
    for op in body.body:
        if not isinstance(op, DmaCopyOp):
            continue
        src, dst = op.access("src"), op.access("dst")
        t, view = dst.tensor, src.tensor
        v = view.defining_op
        bi = v.operand(0) if isinstance(v, HbmViewOp) else view
        if bi not in bound or not isinstance(t.defining_op, AllocOp) or writes.get(t) != 1:
            continue
        if not (
            dst.is_whole() and src.is_whole() and len(t.type.shape) == 2 and t.type.dtype == bi.type.dtype
        ):
            continue
        if isinstance(v, HbmViewOp) and (v.attrs["offset"] != 0 or not _row_major(view)):
            continue
        if view.type.size != bi.type.size:
            continue
        acc = rows_on_chip(ctx, bound[bi], t.type.shape[0])
        if acc is None or tuple(acc.tensor.type.shape) != tuple(t.type.shape) or not acc.is_whole():
            continue
        held[t] = acc.tensor
        skip |= {id(op), id(t.defining_op)}
    for op in body.body:
        if isinstance(op, DeallocOp) and op.operand(0) in held:
            skip.add(id(op))
    return held, skip


def stored_outputs(body: Graph, outputs) -> tuple[dict, set]:
    """For a hand-written body about to be inlined: its outputs (by name, among ``outputs``)
    written whole by one top-level ``dma_copy`` from a whole 2-D SBUF tile of their dtype, row
    major. Returns (output name -> that body tile, ids of the tiles' deallocations, left out so
    that the tiles outlive the body: ``note_stored`` is given them once inlined)."""
    out, skip = {}, set()
    for name in outputs:
        o = body.outputs[name]
        for op in body.body:
            if not isinstance(op, DmaCopyOp):
                continue
            dst, src = op.access("dst"), op.access("src")
            view = dst.tensor
            v = view.defining_op
            if (v.operand(0) if isinstance(v, HbmViewOp) else view) is not o:
                continue
            if isinstance(v, HbmViewOp) and (v.attrs["offset"] != 0 or not _row_major(view)):
                continue
            t = src.tensor
            if (
                dst.is_whole()
                and src.is_whole()
                and view.type.size == o.type.size
                and isinstance(t.defining_op, AllocOp)
                and len(t.type.shape) == 2
                and t.type.dtype == o.type.dtype
            ):
                out[name] = t
    for op in body.body:
        if isinstance(op, DeallocOp) and any(op.operand(0) is t for t in out.values()):
            skip.add(id(op))
    return out, skip


def _row_major(view) -> bool:
    step, ok = 1, True
    for n, s in zip(reversed(view.type.shape), reversed(view.defining_op.attrs["strides"])):
        ok &= n == 1 or s == step
        step *= n
    return ok


def _root(v):
    while isinstance(v.defining_op, HbmViewOp):
        v = v.defining_op.operand(0)
    return v


def drop_unread_scratch(graph: Graph) -> int:
    """Remove every top-level HBM scratch allocation (not a kernel input or output) that no
    instruction reads, the top-level DMAs writing it and the views of it; returns how many
    allocations went."""
    outputs = {id(v) for v in graph.outputs.values()} if isinstance(graph.outputs, dict) else set()
    scratch = {
        op.result: op
        for op in graph.body
        if isinstance(op, AllocOp) and isinstance(op.result.type, HbmType) and id(op.result) not in outputs
    }
    read, writers = set(), {}
    for top in graph.body:
        for op in top.body.walk() if isinstance(top, ForiLoopOp) else [top]:
            if isinstance(op, HbmViewOp):
                continue
            dst = op.access("dst") if isinstance(op, DmaCopyOp) and op is top else None
            for u in op.operands:
                r = _root(u)
                if r not in scratch:
                    continue
                if dst is not None and _root(dst.tensor) is r and _root(op.access("src").tensor) is not r:
                    writers.setdefault(r, []).append(op)
                else:
                    read.add(r)
    dropped = 0
    for r in scratch:
        if r in read:
            continue
        for op in writers.get(r, []):
            op.erase()
        dropped += 1
    if dropped:
        graph.dce()
    return dropped
