"""Column maxima / minima of a large matrix: ``x.max(0)`` / ``x.min(0)`` of an ``(N, D)`` f32
kernel input (2048 x 4096: 32 MiB), streamed in the row pieces of leading_column_sums.py.

The generic lowering (reduce_acc.py) combines every 128-row tile into an SBUF accumulator with
one VectorE ``tensor_tensor`` (two SBUF inputs: 2N cycles, 8.5 µs a 2 MiB tile against the
DMA's 5.8 µs), VectorE-bound at 1.96x the roofline. Here TensorE moves the columns onto the
partitions instead: every 128-column slice of every row of a piece is transposed (fp32, 107 ns)
into a PSUM tile, up to ``GROUP`` rows of one slice side by side in one bank, and one VectorE
``tensor_reduce`` over the bank (reading PSUM: N cycles, 533 ns for 4 x 128 rows) writes the
maximum of those rows for the slice's 128 columns into a column of an SBUF partial tile
``[128, D/128, pieces]``; per column block one more reduce over its pieces gives its columns'
results, ``[128, D/128]`` (column ``c`` on partition ``c mod 128`` of column ``c // 128``),
stored as rows by column_blocks.store_columns (a transpose, a copy and one DMA per 128 slices).
Per 2 MiB piece TensorE works 3.4 µs and VectorE 4.3 µs, both under the DMA's 5.8 µs.

The transposes are bit exact, and the maxima and minima are those of the engine's
``tensor_reduce`` (as the generic lowering's finishing reduce), so results equal NumPy's.
"""

from __future__ import annotations

from ...nki.types import Access
from ...nki.types import ds as _ds
from .column_blocks import P, store_columns
from .leading_column_sums import BUFS, piece_width, row_pieces

GROUP = 4  # transposed 128-row blocks reduced by one tensor_reduce (one 2 KiB PSUM bank)
PSUM_BUFS = 4  # rotating PSUM tiles of the transposes
COMBINE = {"max": "maximum", "min": "minimum"}


def _slices_per_bank(g: int, slices: int) -> int:
    """128-column slices side by side in one PSUM bank for groups of ``g`` rows: ``GROUP``
    transposed blocks a bank, so a short group (the last pieces: 2 or 1 rows) still reduces 4
    blocks in one instruction (one reduce of 512 elements, not 4 of 128 each paying the minimum
    initiation interval and a dependency on the last)."""
    sg = max(1, GROUP // g)
    while slices % sg:
        sg //= 2
    return sg


def emit_leading_column_extremes(ctx, rows, hy, n: int, d: int, kind: str) -> None:
    """Column ``kind`` (max / min) of the input ``rows`` (an HBM view ``(128, n/128, d)``:
    partition ``p`` rows ``p·q ...``) into ``hy`` (an HBM ``(d/128, 128)`` view of the
    output); module docstring."""
    b, op = ctx.b, COMBINE[kind]
    q, w = n // P, piece_width(d)
    blocks, slices = d // w, w // P
    plans = [row_pieces(q, w, cb == blocks - 1) for cb in range(blocks)]
    rmax = max(plans[0])
    units = d // P
    most = max(sum(-(-r // GROUP) for r in plan) for plan in plans)
    part = b.alloc((P, units, most), "f32", "sbuf", name="colpart")
    res = b.alloc((P, units), "f32", "sbuf", name="colred")
    bufs = [b.alloc((P, rmax, w), "f32", "sbuf", name="colx") for _ in range(BUFS)]
    banks: dict = {}  # (slices, rows) per bank -> its rotating PSUM tiles, as used

    def bank(sg: int, g: int):
        key = (sg, g)
        if key not in banks:
            n_bufs = PSUM_BUFS if sg == 1 else 2
            shape = (P, sg, GROUP // sg, P)
            banks[key] = [[b.alloc(shape, "f32", "psum", name="colx_t"), 0] for _ in range(n_bufs)]
        ring = banks[key]
        ring.append(ring.pop(0))
        return ring[-1][0]

    k = 0
    for cb, plan in enumerate(plans):
        r0 = slot = 0
        for r in plan:
            t = bufs[k % BUFS]
            k += 1
            b.dma_copy(
                dst=Access(t, (_ds(0, P), _ds(0, r), _ds(0, w))),
                src=Access(rows, (_ds(0, P), _ds(r0, r), _ds(cb * w, w))),
            )
            for g0 in range(0, r, GROUP):
                g = min(GROUP, r - g0)
                sg = _slices_per_bank(g, slices)
                for s0 in range(0, slices, sg):
                    ps = bank(sg, g)
                    for si in range(sg):
                        for j in range(g):
                            b.nc_transpose(
                                dst=Access(ps, (_ds(0, P), _ds(si, 1), _ds(j, 1), _ds(0, P))),
                                data=Access(t, (_ds(0, P), _ds(g0 + j, 1), _ds((s0 + si) * P, P))),
                            )
                    b.tensor_reduce(
                        dst=Access(part, (_ds(0, P), _ds(cb * slices + s0, sg), _ds(slot, 1))),
                        op=op,
                        data=Access(ps, (_ds(0, P), _ds(0, sg), _ds(0, g), _ds(0, P))),
                        axis=(2, 3),
                        keepdims=False,
                    )
                slot += 1
            r0 += r
        b.tensor_reduce(
            dst=Access(res, (_ds(0, P), _ds(cb * slices, slices))),
            op=op,
            data=Access(part, (_ds(0, P), _ds(cb * slices, slices), _ds(0, slot))),
            axis=(2,),
            keepdims=False,
        )
    store_columns(b, lambda u0, cnt: Access(res, (_ds(0, P), _ds(u0, cnt))), units, hy, 1.0, "colred")
