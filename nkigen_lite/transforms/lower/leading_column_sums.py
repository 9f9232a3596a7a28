"""Column sums of a matrix too large for the spread lowering: ``x.sum(0)`` of an ``(N, D)`` f32
kernel input (2048 x 4096: 32 MiB), streamed through rotating SBUF buffers in row pieces.

Partition ``p`` holds the rows ``p·q ... p·q + q - 1`` (``N = 128·q``). The input is loaded in
*pieces* of ``r`` of those rows and ``W`` columns (``W`` = ``D`` when a row is at most
``RUN_BYTES``, then a piece's rows are one contiguous run; else ``RUN_BYTES`` / 4 columns, runs at
the DMA's saturating size), column block by column block, in ``BUFS`` buffers allocated once
(piece ``n`` in buffer ``n mod BUFS``, named statically: the load of piece ``n + BUFS`` waits for
the matmuls of piece ``n``, as the cost model's scheduler tracks it). Every 128-column slice of
every row of a piece is the *stationary* operand of a matmul against a ones column (one column
of moving data: ``MIN_II`` cycles, ×4 for fp32, 107 ns whatever the slice width), its 128 column
sums landing on the 128 PSUM partitions of that slice's column of one ``[128, D/128]`` fp32
accumulator. TensorE needs 0.85 µs per ``r = 1`` row of 1,024 columns against the DMA's 1.46 µs,
so it keeps up and no other engine takes part; the last column block's rows are cut into
halving pieces (``r, …, 2, 1, 1``) so that little is left after the last byte lands. Then one
copy of the accumulator, and per 128 slices a TensorE transpose, a copy and one store of whole
rows (column_blocks.store_columns).

The sums are fp32 in PSUM, in row order within each column (as NumPy's pairwise order is not, a
float32 rounding apart per term). Each output column reads only its own input column, so a NaN
or inf stays in its column.
"""

from __future__ import annotations

from ...nki.types import Access
from ...nki.types import ds as _ds
from .column_blocks import P, store_columns

RUN_BYTES = 4096  # contiguous bytes per partition at which a DMA runs at full rate
PIECE_BYTES = 16384  # per partition per piece (2 MiB over 128 partitions)
BUFS = 3  # rotating piece buffers


def piece_width(d: int) -> int:
    """Columns per piece: the whole row when it is at most ``RUN_BYTES``, else ``RUN_BYTES`` / 4
    (``D`` a multiple of it), 0 when neither."""
    w = RUN_BYTES // 4
    if d <= w:
        return d
    return w if d % w == 0 else 0


def row_pieces(q: int, w: int, last: bool) -> list[int]:
    """Rows per piece of one column block: ``PIECE_BYTES`` worth each; for the ``last`` block the
    final full piece is cut in halves, down to one row (…, 2, 1, 1)."""
    r = max(1, min(q, PIECE_BYTES // (w * 4)))
    out, left = [], q
    while left > 0:
        out.append(min(r, left))
        left -= out[-1]
    if last:
        tail = out.pop()
        cut = []
        while tail > 1:
            half = tail // 2
            cut.append(tail - half)
            tail = half
        out += cut + [tail] if tail else cut
    return out


def plan_fits(n: int, d: int, budget: int) -> bool:
    """The pieces of an ``(n, d)`` f32 input fit ``budget`` bytes per partition."""
    w = piece_width(d)
    if n % P or d % P or w == 0:
        return False
    r = max(row_pieces(n // P, w, False))
    return BUFS * r * w * 4 <= budget


def emit_leading_column_sums(ctx, rows, hy, n: int, d: int) -> None:
    """Column sums of the input ``rows`` (an HBM view ``(128, n/128, d)``: partition ``p`` rows
    ``p·q ...``) into ``hy`` (an HBM ``(d/128, 128)`` view of the output); module docstring."""
    b = ctx.b
    q, w = n // P, piece_width(d)
    blocks, slices = d // w, w // P
    rmax = max(row_pieces(q, w, False))
    units = d // P
    ones = b.alloc((P, 1), "f32", "sbuf", name="ones")
    b.memset(dst=Access(ones, (_ds(0, P), _ds(0, 1))), value=1.0)
    acc = b.alloc((P, units), "f32", "psum", name="colsums")
    bufs = [b.alloc((P, rmax, w), "f32", "sbuf", name="colx") for _ in range(BUFS)]
    k = 0
    for cb in range(blocks):
        r0 = 0
        for r in row_pieces(q, w, cb == blocks - 1):
            t = bufs[k % BUFS]
            k += 1
            b.dma_copy(
                dst=Access(t, (_ds(0, P), _ds(0, r), _ds(0, w))),
                src=Access(rows, (_ds(0, P), _ds(r0, r), _ds(cb * w, w))),
            )
            for gr in range(r):
                for s in range(slices):
                    b.nc_matmul(
                        dst=Access(acc, (_ds(0, P), _ds(cb * slices + s, 1))),
                        stationary=Access(t, (_ds(0, P), _ds(gr, 1), _ds(s * P, P))),
                        moving=Access(ones, (_ds(0, P), _ds(0, 1))),
                        accumulate=r0 + gr > 0,
                    )
            r0 += r
    sums = b.alloc((P, units), "f32", "sbuf", name="colsums_sb")
    b.tensor_copy(dst=Access(sums, (_ds(0, P), _ds(0, units))), src=Access(acc, (_ds(0, P), _ds(0, units))))
    store_columns(b, lambda u0, cnt: Access(sums, (_ds(0, P), _ds(u0, cnt))), units, hy, 1.0, "colsum")
