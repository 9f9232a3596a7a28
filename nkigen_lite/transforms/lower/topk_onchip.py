"""topk reading its rows from the SBUF tile still holding them, and leaving its values there.

gpt-oss's router ``topk(x @ W + b, 4)`` then ``softmax`` of the picked values, at decode size
(8 rows of 32 logits): the fusion group adding the bias stored the logits to HBM scratch and
topk loaded them back, then topk stored its values to scratch and the softmax group loaded them
back — four dependent DMAs of a few hundred bytes, each paying the 1.9 µs of fixed DMA cost.
When the operand is held at the kernel's top level as a whole ``(rows, n)`` tile of its dtype,
rows on the partitions (onchip_rows.py), and topk reads each row in one chunk and one round
(the tile is then only read: no ``match_replace8`` writes it), topk's chunk is that tile. Its
values tile is noted as held, so a later item reads it instead of the scratch. Scratch that
nothing reads is dropped with its stores (``drop_unread_scratch``).
"""

from __future__ import annotations

from ...ir.value import Value
from ...nki.types import Access
from .onchip_rows import note_stored, rows_on_chip


def held_rows(ctx, x: Value, rows: int, n: int, last_axis: bool) -> Access | None:
    """The SBUF tile holding ``x`` as ``rows`` partitions of ``n`` elements (the topk axis
    last), at the kernel's top level, or None."""
    if not last_axis or rows > ctx.partitions or len(ctx.b._blocks) != 1:
        return None
    acc = rows_on_chip(ctx, x, rows)
    if acc is None or acc.dtype != x.type.dtype or not acc.is_whole():
        return None
    return acc if tuple(acc.tensor.type.shape) == (rows, n) else None


def note_values(ctx, v: Value | None, tile: Value) -> None:
    """Note the whole ``(rows, k)`` values tile of a top-level topk as holding ``v``."""
    if v is not None:
        note_stored(ctx, v, Access.whole(tile), top_level=len(ctx.b._blocks) == 1)
