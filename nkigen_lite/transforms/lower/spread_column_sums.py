"""Column sums of a spread reduction (``x.sum(0)`` of a kernel input seen as ``[P, r·C]``,
partition ``p`` holding the ``r`` whole rows ``p·r ... p·r + r - 1``), on TensorE alone, shaped
for a short tail after the last byte arrives.

Every row is cut into *blocks* of up to ``P`` columns. A block of a row, ``[P, w]`` in SBUF, is
the *stationary* operand of a matmul against a ones column (moving ``[P, 1]``): TensorE sums it
over the partitions into ``w`` PSUM partitions, column ``j`` of one ``[P, n_blocks]`` fp32 PSUM
tile for block ``j``, all rows accumulating into it. Such a matmul costs the moving operand's one
column — ``MIN_II`` cycles (×4 for fp32 data) whatever ``w`` — where the ones row as stationary
would cost ``w`` columns; so TensorE keeps up with the loads and no other engine takes rows. (The
stationary load is assumed hidden behind the previous matmul, as the cost model does: facts
§7.2, LoadStationary up to 4x faster than a matmul.)

The input is loaded in chunks along the partition's elements (``plan_column_sums``), cut at
block edges: a few large ones, then the last row's last block alone, so that when the last byte
arrives only one matmul, one PSUM -> SBUF copy of ``[P, n_blocks]`` and the store are left. The
store writes the sums from the partitions (column ``c`` of the output from partition ``c mod P``
of column ``c // P``): element-sized DMA descriptors, a few hundred ns for at most 2,048 columns.
"""

from __future__ import annotations

from ...nki.types import Access
from ...nki.types import ds as _ds
from ...perf.latency import dependency_latency
from .spread_timing import arrivals

BULK_RATIOS = (1.0, 0.7, 0.5, 0.3)  # each chunk this fraction of the one before
BULK_CHUNKS = (1, 2, 3, 4)  # chunks before the last block
EVERY_SPLIT_UNITS = 32  # bulks of at most this many units also try every non-increasing split


def pieces(start: int, count: int, cols: int, block: int) -> list[tuple[int, int, int]]:
    """(row, first column, width) of the block pieces of the elements ``start`` ...
    ``start + count - 1`` of a partition's rows of ``cols`` columns, cut at block edges."""
    out, e = [], start
    while e < start + count:
        row, col = divmod(e, cols)
        w = min(block - col % block, cols - col, start + count - e)
        out.append((row, col, w))
        e += w
    return out


def _unit(cols: int, block: int) -> int:
    """Chunk edges fall on multiples of this many elements (block edges within rows)."""
    return block if cols % block == 0 else cols


def _splits(units: int, parts: int, most: int):
    """Every non-increasing list of at most ``parts`` positive numbers, each at most ``most``,
    summing to ``units``, largest first."""
    if units == 0:
        yield []
        return
    if parts == 0:
        return
    for first in range(min(units, most), 0, -1):
        for rest in _splits(units - first, parts - 1, first):
            yield [first, *rest]


def _candidates(rows: int, cols: int, block: int):
    """Plans (elements per chunk): ``nb`` chunks, each ``r`` times the one before, then the
    last row's last block (one chunk when there is nothing before it); for a bulk of at most
    ``EVERY_SPLIT_UNITS`` units also every non-increasing split of it into at most
    ``max(BULK_CHUNKS)`` chunks (the best need not be geometric: 1024×256 f32 takes 4, 2.5 and
    1 KiB per partition before the last block)."""
    n = rows * cols
    last = cols - (cols - 1) // block * block
    rest = n - last
    if rest == 0:
        yield [n]
        return
    unit = _unit(cols, block)
    seen = set()
    for nb in BULK_CHUNKS:
        for r in BULK_RATIOS:
            weights = [r**i for i in range(nb)]
            sizes = [int(rest * w / sum(weights)) // unit * unit for w in weights]
            sizes[0] += rest - sum(sizes)
            if min(sizes) <= 0:
                continue
            plan = tuple(sizes + [last])
            if plan not in seen:
                seen.add(plan)
                yield list(plan)
    if rest % unit == 0 and rest // unit <= EVERY_SPLIT_UNITS:
        for split in _splits(rest // unit, max(BULK_CHUNKS), rest // unit):
            plan = tuple([u * unit for u in split] + [last])
            if plan not in seen:
                seen.add(plan)
                yield list(plan)


def matmul_ns(target, itemsize: int) -> float:
    """One block matmul: the ones column is the moving operand (MIN_II cycles, x4 for fp32)."""
    rate = target.matmul_fp32_factor if itemsize == 4 else 1
    return target.min_ii_cycles * rate * 1e9 / target.tensor_clock_hz


def last_matmul_end(target, plan, cols: int, itemsize: int, partitions: int) -> float:
    """Estimated end (ns) of TensorE's last matmul: the chunks' pieces in order, each when its
    chunk has arrived."""
    lat = dependency_latency("dma", "tensor", target)
    mm = matmul_ns(target, itemsize)
    t, start = 0.0, 0
    for cnt, at in zip(plan, arrivals(target, partitions, [c * itemsize for c in plan])):
        for _ in pieces(start, cnt, cols, partitions):
            t = max(t, at + lat) + mm
        start += cnt
    return t


def plan_column_sums(target, rows: int, cols: int, itemsize: int, partitions: int) -> list[int]:
    """Elements per chunk: the candidate whose last matmul is estimated to end first (ties:
    fewer chunks, then the earlier candidate)."""
    best = None
    for plan in _candidates(rows, cols, partitions):
        key = (round(last_matmul_end(target, plan, cols, itemsize, partitions), 3), len(plan))
        if best is None or key < best[0]:
            best = (key, plan)
    return best[1]


def emit_column_sums(ctx, sr, hy, rows: int, load_chunks) -> None:
    """Emit the column sums of the input (``rows`` whole rows of ``sr.cols`` per partition) into
    the output home ``hy`` (``[1, C]``, unit stride); ``load_chunks(spans)`` emits one SBUF tile
    and DMA per (start, count) span of the ``[P, rows·C]`` input."""
    b, p, dt, tg, c = ctx.b, ctx.partitions, sr.x.type.dtype, ctx.target, sr.cols
    plan = plan_column_sums(tg, rows, c, dt.itemsize, p)
    spans, s0 = [], 0
    for cnt in plan:
        spans.append((s0, cnt))
        s0 += cnt
    nblk = -(-c // p)
    ones = b.alloc((p, 1), dt, "sbuf", name="ones")
    b.memset(dst=ones, value=1.0)
    tiles = load_chunks(spans)
    ctx.at_op(sr.op)
    ps = b.alloc((p, nblk), "f32", "psum", name="psum_colsum")
    opened = set()
    for t, (s, cnt) in zip(tiles, spans):
        for row, col, w in pieces(s, cnt, c, p):
            j = col // p
            e = row * c + col - s
            b.nc_matmul(
                dst=Access(ps, (_ds(col % p, w), _ds(j, 1))),
                stationary=Access(t, (_ds(0, p), _ds(e, w))),
                moving=ones,
                accumulate=j in opened,
            )
            opened.add(j)
    out = b.alloc((p, nblk), sr.op.result.type.dtype, "sbuf", name=sr.op.result.name_hint or "red")
    full, last = c // p, c % p
    if full:
        b.tensor_copy(
            dst=Access(out, (_ds(0, p), _ds(0, full))),
            src=Access(ps, (_ds(0, p), _ds(0, full))),
            engine="scalar",
        )
    if last:
        b.tensor_copy(
            dst=Access(out, (_ds(0, last), _ds(full, 1))),
            src=Access(ps, (_ds(0, last), _ds(full, 1))),
            engine="scalar",
        )
    ctx.at(f"store {ctx.name(sr.op.result)}")
    if full:
        yv = ctx.view(hy.sub(1, 0, full * p).reshape((full, p)).transpose((1, 0)))
        b.dma_copy(dst=Access(yv, (_ds(0, p), _ds(0, full))), src=Access(out, (_ds(0, p), _ds(0, full))))
    if last:
        yv = ctx.view(hy.sub(1, full * p, last).reshape((last, 1)))
        b.dma_copy(dst=Access(yv, (_ds(0, last), _ds(0, 1))), src=Access(out, (_ds(0, last), _ds(full, 1))))
