"""Row blocks: softmax and log_softmax over many narrow rows (attention-score shaped, e.g.
16 x 128 x 128 f32) with each partition holding a block of consecutive rows.

The row-major lowering gives row ``t·128 + p`` of tile ``t`` to partition ``p``, so every tile's
DMA moves one short row per partition (512 B for 128 f32 columns: DMA efficiency ~0.59) and each
tile pays a DMA's fixed cost twice (load and store, 600 ns of HW-DGE issue each on two queues:
16 tiles of 128 x 128 spend longer issuing than transferring). Here the ``R = 128·r`` rows are
seen as ``[128, r·N]``: partition ``p`` holds the ``r`` consecutive rows ``p·r ... p·r + r - 1``,
``r·N`` contiguous elements. They are loaded in chunks of whole rows, all issued up front;
every row is normalised as before (VectorE row max, ScalarE exp with the summing
``reduce_res``, the reciprocal, and the scaling on VectorE; log_softmax: the log and
``x - max - log(sum)``) into an output tile per chunk, stored as soon as the chunk is done.
The rows are software-pipelined: a row's scaling is emitted ``LAG`` rows after its max and exp.

The chunk sizes (``choose_plan``) are those of the candidate plan (uniform chunks of 1 ... rows
per partition up to ``CHUNK_BYTES``, with or without short last chunks) whose block the cost
model's list scheduler (perf/schedule.py) finishes earliest; which is best depends on the row
width and count (for 16 x 128 x 128 f32, eight chunks of two rows).

**Logical NeuronCores** (``nk.split_cores``, nki/lnc.py). The split shares out a top-level
loop's iterations between the cores. Lowered for ``lnc`` cores (``LowerContext.lnc``, which
``split_cores`` sets when it lowers the kernel again), the rows are ``lnc`` groups of ``r / lnc``
rows per partition: one ``fori_loop`` of ``lnc`` trips, each a row block of its own writing a
disjoint window of the output, which the split gives one core each. One core keeps the single
straight-line block (no loop).

The pattern is the row split's (row_split.match_softmax); claimed when the rows are a multiple
of 128, at least ``MIN_ROWS`` per partition (fewer rows are at most six 128-row tiles, which the
row-major lowering runs as list-scheduled straight-line code: as fast or faster under the cost
model; ``MIN_WIDE_ROWS`` for rows of 1 KiB or more, whose tiles already move 1 KiB descriptors),
narrower than ``MAX_ROW_BYTES``, and the whole input fits ``budget / 4`` of SBUF per partition;
and only a softmax of a kernel input whose result is only returned: one between other ops (the
Qwen3 layer's attention at seq 128) stays fused with them rather than send its rows through HBM.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.graph import ReturnOp
from ...ir.value import Value
from ...nki.builder import Builder as NkiBuilder
from ...nki.types import Access, ds
from ...perf.schedule import Scheduler
from ...tensor import ops as T
from .row_split import match_softmax

MIN_ROWS = 7  # rows per partition: the row-major loop of <= 6 tiles becomes straight code
WIDE_ROW_BYTES = 1024  # rows this wide (f32 math) already move 1 KiB descriptors per tile ...
MIN_WIDE_ROWS = 12  # ... and need this many rows per partition to gain (1 to 2.5% slower at 7-8)
MAX_ROW_BYTES = 2048  # rows this wide already move efficient (>= 2 KiB) descriptors per tile
CHUNK_BYTES = 4096  # per partition: the largest chunk a candidate plan loads
CHUNK_ROWS = (1, 2, 3, 4, 6, 8)  # rows per chunk of the candidate plans
TAILS = ((), (1,))  # short last chunks the candidates may end with
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
        if x.defining_op is not None or any(not isinstance(u, ReturnOp) for u in y.users):
            return None  # between other ops it stays fused with them (else x and y go through HBM)
        rows = 1
        for d in shape[:-1]:
            rows *= d
        n = shape[-1]
        width = max(x.type.dtype.itemsize, y.type.dtype.itemsize, 4) * n
        least = MIN_WIDE_ROWS if width >= WIDE_ROW_BYTES else MIN_ROWS
        if rows % partitions or rows // partitions < least or width >= MAX_ROW_BYTES:
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


def candidate_plans(rows: int, row_bytes: int) -> list[list[int]]:
    """Rows per partition of each chunk, for every candidate: ``rows - sum(tail)`` rows in
    near-equal chunks of at most ``c`` rows (``c`` from ``CHUNK_ROWS``, ``c`` rows at most
    ``CHUNK_BYTES``), then the tail's chunks; no duplicates, in a fixed order."""
    out: list[list[int]] = []
    for tail in TAILS:
        left = rows - sum(tail)
        if tail and left < tail[0]:  # what is left stays at least as large as the tail
            continue
        for c in CHUNK_ROWS:
            if c > left or (c > 1 and c * row_bytes > CHUNK_BYTES):
                continue
            n = -(-left // c)
            p = [left // n + (1 if i < left % n else 0) for i in range(n)] + list(tail)
            if p not in out:
                out.append(p)
    return out


def choose_plan(target, func: str, rows: int, cols: int, xdt, ydt) -> list[int]:
    """The candidate plan whose block (emitted alone, ``[128, rows·cols]`` in and out) the cost
    model's list scheduler finishes first; the earlier candidate on a tie."""
    best, best_ns = None, None
    p = target.num_partitions
    for sizes in candidate_plans(rows, cols * max(xdt.itemsize, ydt.itemsize)):
        b = NkiBuilder("row_block_plan")
        x = b.add_input("x", (p, rows * cols), xdt)
        y = b.alloc((p, rows * cols), ydt, "hbm", name="y")
        _emit_block(b, lambda _text: None, func, x, y, 0, p, sizes, cols, ydt)
        b.set_outputs({"y": y})
        sched = Scheduler(target)
        sched.run(b.graph.body)
        if best_ns is None or sched.makespan < best_ns:
            best, best_ns = sizes, sched.makespan
    return best


def row_groups(rb: RowBlocks, lnc: int) -> int:
    """How many row groups ``rb`` is lowered in: ``lnc`` (one per core) when the rows per
    partition divide into ``lnc`` groups, else 1."""
    return lnc if lnc > 1 and rb.rows % lnc == 0 else 1


def emit_row_blocks(ctx, rb: RowBlocks) -> bool:
    """Emit ``rb``; False (nothing emitted) when the input or output is not ``[128, r·N]``
    contiguous per partition."""
    p, n = ctx.partitions, rb.cols
    groups = row_groups(rb, ctx.lnc)
    r = rb.rows // groups
    hx = ctx.home(rb.x).reshape((groups * p, r * n)) if rb.x in ctx.homes else None
    if hx is None or hx.strides[1] != 1:
        return False
    hy = ctx.home_for_store(rb.out).reshape((groups * p, r * n))
    if hy is None or hy.strides[1] != 1:
        return False
    xv, yv = ctx.view(hx), ctx.view(hy)
    ydt = rb.out.type.dtype
    sizes = choose_plan(ctx.target, rb.func, r, n, rb.x.type.dtype, ydt)
    kind = "softmax" if rb.func == "exp" else "log_softmax"
    what = f"row blocks over {groups * p}x{r}x{n}: {kind}"
    names = {"load": f"load {ctx.name(rb.x)}", "store": f"store {ctx.name(rb.out)}", "rows": what}

    def at(text: str) -> None:
        ctx.at(names[text])

    if groups == 1:
        _emit_block(ctx.b, at, rb.func, xv, yv, 0, p, sizes, n, ydt)
    else:
        with ctx.b.fori_loop(0, groups) as g:
            _emit_block(ctx.b, at, rb.func, xv, yv, g * p, p, sizes, n, ydt)
    return True


def _emit_block(b, at, func: str, xv, yv, first, p: int, sizes: list[int], n: int, ydt) -> None:
    """One row block: partitions ``first ... first + 127`` of the ``[*, r·n]`` HBM views ``xv``
    (in) and ``yv`` (out; ``p`` partitions), loaded in chunks of ``sizes`` rows per partition, every row
    normalised (``func``: "exp" softmax, "copy" log_softmax), each chunk stored when done.
    ``at("load" | "store" | "rows")`` stamps the source location of what follows."""
    r = sum(sizes)
    at("load")
    tiles, start = [], 0
    for k in sizes:
        t = b.alloc((p, k * n), xv.type.dtype, "sbuf", name="xrows")
        b.dma_copy(
            dst=Access(t, (ds(0, p), ds(0, k * n))), src=Access(xv, (ds(first, p), ds(start * n, k * n)))
        )
        tiles.append((t, start, k))
        start += k
    at("rows")
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
            state[step] = _head(b, rows[step][0], scratch[step % len(scratch)], p, n)
        if 0 <= step - 1 < len(rows):  # one row later: ScalarE never waits on its own exp
            state[step - 1] = _scalar(b, func, *state[step - 1], p)
        i = step - LAG
        if i >= 0:
            x, y, c, last = rows[i]
            _finish(b, func, x, y, state.pop(i), scratch[i % len(scratch)], p, n)
            if last:
                _, s0, k = tiles[c]
                at("store")
                b.dma_copy(
                    dst=Access(yv, (ds(first, p), ds(s0 * n, k * n))),
                    src=Access(outs[c], (ds(0, p), ds(0, k * n))),
                )
                at("rows")


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
