"""Row blocks: softmax and log_softmax over many narrow rows (attention-score shaped, e.g.
16 x 128 x 128 f32) with each partition holding a block of consecutive rows.

The row-major lowering gives row ``t·128 + p`` of tile ``t`` to partition ``p``, so every tile's
DMA moves one short row per partition (512 B for 128 f32 columns: DMA efficiency ~0.59) and each
tile pays a DMA's fixed cost twice (load and store, 600 ns of HW-DGE issue each on two queues:
16 tiles of 128 x 128 spend longer issuing than transferring). Here the ``R = 128·r`` rows are
seen as ``[128, r·N]``: partition ``p`` holds the ``r`` consecutive rows ``p·r ... p·r + r - 1``,
``r·N`` contiguous elements. They are loaded in a few chunks of whole rows (``plan``: large
first, small last, so that little is left after the last byte), all issued up front; every row
is normalised as before (VectorE row max, ScalarE exp with the summing ``reduce_res``, the
reciprocal, and the scaling on VectorE; log_softmax: the log and ``x - max - log(sum)`` as one
activation) into an output tile per chunk, stored as soon as the chunk is done. Same
instructions per row as the row-major lowering, a few large DMAs instead of two per tile.

The pattern is the row split's (row_split.match_softmax); claimed when the rows are a multiple
of 128, at least two per partition, narrower than ``MAX_ROW_BYTES`` and the whole input fits
``budget / 4`` of SBUF per partition.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.value import Value
from ...nki.types import Access, ds
from ...tensor import ops as T
from .row_split import match_softmax

MAX_ROW_BYTES = 2048  # rows this wide already move efficient (>= 2 KiB) descriptors per tile
CHUNK_BYTES = 4096  # per partition: the leading chunks (full DMA efficiency)
TAIL_ROWS = (2, 1)  # rows per partition of the last chunks (short work after the last byte)
LAG = 6  # rows between a row's max / exp and its scaling in the emitted order
SCRATCH = LAG + 2  # rotating exp tiles (rows in flight)


@dataclass(eq=False)
class RowBlocks:
    """A softmax / log_softmax over ``128·rows`` rows of ``cols`` columns claimed here."""

    ops: set
    x: Value
    out: Value
    func: str  # "exp" (softmax) or "copy" (log_softmax)
    rows: int  # r: rows per partition
    cols: int  # N


def find_row_blocks(graph, partitions: int, budget: int, taken: set) -> list[RowBlocks]:
    """Every softmax / log_softmax over many narrow rows of ``graph``'s top block whose ops are
    not in ``taken``."""
    out = []
    taken = set(taken)

    def accept(ops, x, y, func):
        shape = x.type.shape
        if len(shape) < 2:
            return None
        rows = 1
        for d in shape[:-1]:
            rows *= d
        n = shape[-1]
        width = max(x.type.dtype.itemsize, y.type.dtype.itemsize, 4) * n
        if rows % partitions or rows // partitions < 2 or width >= MAX_ROW_BYTES:
            return None
        if rows // partitions * width * 2 > budget // 4:  # input, output and scratch resident
            return None
        return RowBlocks(ops, x, y, func, rows // partitions, n)

    for op in graph.body:
        if isinstance(op, T.ReduceOp) and op not in taken:
            rb = match_softmax(op, accept)
            if rb is not None and not (rb.ops & taken):
                out.append(rb)
                taken |= rb.ops
    return out


def plan(rows: int, row_bytes: int) -> list[int]:
    """Rows per partition of each chunk: chunks of about ``CHUNK_BYTES``, then ``TAIL_ROWS``."""
    tail = []
    left = rows
    for t in TAIL_ROWS:
        if left - t >= t:  # what is left stays at least as large as the tail chunk
            tail.append(t)
            left -= t
    per = max(1, CHUNK_BYTES // row_bytes)
    n = -(-left // per)
    head = [left // n + (1 if i < left % n else 0) for i in range(n)]
    return head + tail


def emit_row_blocks(ctx, rb: RowBlocks) -> bool:
    """Emit ``rb``; False (nothing emitted) when the input or output is not ``[128, r·N]``
    contiguous per partition."""
    p, r, n = ctx.partitions, rb.rows, rb.cols
    hx = ctx.home(rb.x).reshape((p, r * n)) if rb.x in ctx.homes else None
    if hx is None or hx.strides[1] != 1:
        return False
    hy = ctx.home_for_store(rb.out).reshape((p, r * n))
    if hy is None or hy.strides[1] != 1:
        return False
    b, xdt, ydt = ctx.b, rb.x.type.dtype, rb.out.type.dtype
    xv, yv = ctx.view(hx), ctx.view(hy)
    sizes = plan(r, n * max(xdt.itemsize, ydt.itemsize))
    ctx.at(f"load {ctx.name(rb.x)}")
    tiles, start = [], 0
    for k in sizes:
        t = b.alloc((p, k * n), xdt, "sbuf", name="xrows")
        b.dma_copy(
            dst=Access(t, (ds(0, p), ds(0, k * n))), src=Access(xv, (ds(0, p), ds(start * n, k * n)))
        )
        tiles.append((t, start, k))
        start += k
    what = f"row blocks over {p}x{r}x{n}: {'softmax' if rb.func == 'exp' else 'log_softmax'}"
    ctx.at(what)
    scratch = [b.alloc((p, n), "f32", "sbuf", name="exprow") for _ in range(min(SCRATCH, r))]
    rows = []  # (x row, y row, chunk index, last row of its chunk)
    outs = []
    for c, (t, _, k) in enumerate(tiles):
        o = b.alloc((p, k * n), ydt, "sbuf", name="yrows")
        outs.append(o)
        for j in range(k):
            rows.append(
                (Access(t, (ds(0, p), ds(j * n, n))), Access(o, (ds(0, p), ds(j * n, n))), c, j == k - 1)
            )
    # software-pipelined: row i's max and exp are emitted LAG rows ahead of its scaling, so no
    # engine waits on another's latency while earlier rows have work left
    state = {}
    for step in range(len(rows) + LAG):
        if step < len(rows):
            x = rows[step][0]
            state[step] = _head(b, x, scratch[step % len(scratch)], p, n)
        if 0 <= step - 1 < len(rows):  # one row later: ScalarE never waits on its own exp
            state[step - 1] = _scalar(b, rb.func, *state[step - 1], p)
        i = step - LAG
        if i >= 0:
            x, y, c, last = rows[i]
            _finish(b, rb.func, x, y, state.pop(i), scratch[i % len(scratch)], p, n)
            if last:
                _, s0, k = tiles[c]
                ctx.at(f"store {ctx.name(rb.out)}")
                b.dma_copy(
                    dst=Access(yv, (ds(0, p), ds(s0 * n, k * n))),
                    src=Access(outs[c], (ds(0, p), ds(0, k * n))),
                )
                ctx.at(what)
    return True


def _head(b, x: Access, e, p: int, n: int):
    """The row max and the exp with its sum: (negated max, sum) columns."""
    col = (ds(0, p), ds(0, 1))
    negmax = b.alloc((p, 1), "f32", "sbuf", name="negmax")
    b.tensor_reduce(dst=negmax, op="maximum", data=x, axis=(1,), negate=True, keepdims=True)
    total = b.alloc((p, 1), "f32", "sbuf", name="rowsum")
    b.activation(
        dst=Access(e, (ds(0, p), ds(0, n))), op="exp", data=x, bias=Access(negmax, col), reduce_res=total
    )
    return negmax, total


def _scalar(b, func: str, negmax, total, p: int):
    """The per-partition column ``_finish`` applies: the sum's reciprocal (softmax) or the
    shift ``-max - log(sum)`` (log_softmax)."""
    if func == "exp":
        recip = b.alloc((p, 1), "f32", "sbuf", name="recip")
        b.activation(dst=recip, op="reciprocal", data=total)
        return recip
    b.activation(dst=total, op="log", data=total)
    shift = b.alloc((p, 1), "f32", "sbuf", name="shift")
    b.tensor_tensor(dst=shift, data1=negmax, data2=total, op="subtract")
    return shift


def _finish(b, func: str, x: Access, y: Access, scalar, e, p: int, n: int) -> None:
    """``y = exp_row · (1 / sum)`` (softmax) or ``y = x + shift`` (log_softmax), on VectorE
    (every row of a chunk on one engine: the scheduler orders writers of one tile, so rows
    finished on different engines would wait for each other)."""
    col = Access(scalar, (ds(0, p), ds(0, 1)))
    data = Access(e, (ds(0, p), ds(0, n))) if func == "exp" else x
    b.tensor_scalar(dst=y, data=data, op0="multiply" if func == "exp" else "add", operand0=col)
