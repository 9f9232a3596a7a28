"""Spread reductions: a sum of a kernel input over all its axes (``x.sum()``) or over its leading
axes (column sums, ``x.sum(0)``) with the input spread over all partitions in a few large DMAs
and the work shared between engines.

The generic lowering (reduce_acc.py) loads one 128-row tile per loop iteration (512x512 f32:
four DMAs of 2 KiB per partition; 1024x256: eight of 1 KiB) and adds every tile into the
accumulator on VectorE, one after another, so the fixed cost of each DMA and every VectorE pass
sits on the critical path. Here the input, row-major contiguous, is seen as ``[P, F]``:
partition ``p`` holds the ``F`` contiguous elements ``p·F ... p·F + F - 1`` (for column sums, the
``r = R / P`` whole rows ``p·r ... p·r + r - 1`` of ``C`` columns). It is loaded in a few chunks
along ``F`` (``chunks``: up to 4 KiB per partition, the last one about 1 KiB so that little work
is left when the last byte arrives), all issued up front, and:

- **full sum**: each chunk is summed per partition, part on VectorE (``tensor_reduce``) and part
  on ScalarE (the ``copy`` activation's ``reduce_res``), each into its own column of a
  ``[P, n]`` fp32 tile of partials; one ones-vector matmul sums the partials over the partitions
  into PSUM and one ``tensor_reduce`` of that ``[1, n]`` row gives the result;
- **column sums**: every row slice ``[P, C]`` of a chunk is summed over the partitions either on
  TensorE (a ones-vector matmul accumulating into one PSUM row per 512 columns, the accumulation
  group spanning all rows) or on VectorE (added into an fp32 ``[P, C]`` accumulator, which one
  more ones-matmul adds to the same PSUM accumulation). Rows are given to the engine that would
  finish them first (``_assign``, from the target's clocks and the chunks' arrival); the last
  chunk's rows all go to TensorE, after the accumulator's matmul, so VectorE's work is done
  before the last chunk arrives. The PSUM row is copied to SBUF and stored.

Results are fp32 sums (the ones-matmul sums in fp32 PSUM) in a different order than NumPy's.
The pattern is claimed on the tensor graph (``find_spread_reduces``): a ``sum`` whose operand is
a kernel input and whose result is only returned (maybe through a reshape); inputs between ``MIN_BYTES`` and
``MAX_BYTES`` per partition (larger ones keep the looped lowering, which streams them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.graph import ReturnOp
from ...ir.value import Value
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T
from .spread_full_sum import emit_full_sum

MIN_BYTES = 512  # per partition: below this the looped lowering is as good
MAX_BYTES = 64 * 1024  # per partition: above this the input streams through a loop instead
CHUNK_BYTES = 4096  # per partition and DMA (>= 4 KiB runs at full DMA efficiency)
LAST_CHUNK_BYTES = 1024  # the last DMA: small, so little work follows the last byte
MAX_ROWS_PER_PARTITION = 64  # column sums: rows per partition (one instruction each)
MAX_COLUMNS = 2048  # column sums: PSUM rows of 512 fp32 each, at most 4 banks
FIRST_BYTE_NS = 1900.0  # DGE issue + first-byte latency of the first DMA (docs/costmodel.md)
HBM_BYTES_PER_NS = 360.0 / 128  # per partition: the core's HBM share spread over 128 partitions


@dataclass(eq=False)
class SpreadReduce:
    """A claimed sum: ``x`` (a kernel input) summed over its leading ``R`` elements' worth of
    axes, keeping ``C`` trailing elements (``C = 1``: a full sum)."""

    op: T.ReduceOp
    x: Value
    rows: int  # R
    cols: int  # C

    @property
    def ops(self) -> set:
        """The tensor ops it computes (the driver keeps them in a fusion group of their own)."""
        return {self.op}


def _ds(start, n: int) -> DimSlice:
    return DimSlice(Affine.of(start), n, 1)


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _only_returned(v: Value, depth: int = 0) -> bool:
    """``v`` is only returned, directly or through reshapes (its home is then the output's)."""
    uses = v.uses
    if not uses:
        return False
    for u in uses:
        if isinstance(u.op, T.ReshapeOp) and depth == 0:
            if not _only_returned(u.op.result, 1):
                return False
        elif not isinstance(u.op, ReturnOp):
            return False
    return True


def _claim(op, partitions: int) -> SpreadReduce | None:
    if not isinstance(op, T.ReduceOp) or op.attrs["kind"] != "sum":
        return None
    x = op.operand(0)
    if x.defining_op is not None or not x.type.dtype.is_float or x.type.dtype.itemsize not in (2, 4):
        return None
    if not _only_returned(op.result):
        return None
    shape = x.type.shape
    axes = sorted(int(a) % max(len(shape), 1) for a in op.attrs["axes"])
    if not shape or axes != list(range(len(axes))) or not axes:
        return None
    rows, cols = _prod(shape[: len(axes)]), _prod(shape[len(axes) :])
    per_partition = rows * cols // partitions * x.type.dtype.itemsize
    if rows % partitions or cols > MAX_COLUMNS or not MIN_BYTES <= per_partition <= MAX_BYTES:
        return None
    if cols > 1 and rows // partitions > MAX_ROWS_PER_PARTITION:  # one matmul or add per row
        return None
    return SpreadReduce(op, x, rows, cols)


def find_spread_reduces(graph, partitions: int) -> list[SpreadReduce]:
    """Every sum of ``graph``'s top block the spread lowering claims."""
    out = []
    for op in graph.body:
        sr = _claim(op, partitions)
        if sr is not None:
            out.append(sr)
    return out


def chunks(units: int, unit_bytes: int) -> list[tuple[int, int]]:
    """(start, count) chunks of ``units`` (elements or rows of ``unit_bytes`` each): one when
    they fit ``2 · LAST_CHUNK_BYTES``, else a last chunk of about ``LAST_CHUNK_BYTES`` after
    near-equal chunks of at most ``CHUNK_BYTES``."""
    total = units * unit_bytes
    if total <= 2 * LAST_CHUNK_BYTES or units == 1:
        return [(0, units)]
    last = min(units - 1, max(1, -(-LAST_CHUNK_BYTES // unit_bytes)))
    rest = units - last
    n = max(1, min(rest, -(-rest * unit_bytes // CHUNK_BYTES)))
    out, start = [], 0
    for i in range(n):
        cnt = rest // n + (1 if i < rest % n else 0)
        out.append((start, cnt))
        start += cnt
    return out + [(start, last)]


def _arrivals(sizes_bytes: list[int]) -> list[float]:
    """Estimated time (ns) each chunk has arrived: transfers back to back at the HBM rate after
    the first DMA's fixed cost."""
    t, out = FIRST_BYTE_NS, []
    for b in sizes_bytes:
        t += b / HBM_BYTES_PER_NS
        out.append(t)
    return out


def emit_spread_reduce(ctx, sr: SpreadReduce) -> bool:
    """Emit ``sr``; False (nothing emitted) when the input or output is not contiguous."""
    p = ctx.partitions
    x, v = sr.x, sr.op.result
    n = sr.rows * sr.cols // p
    hx = ctx.home(x).reshape((p, n)) if x in ctx.homes else None
    if hx is None or hx.strides[1] != 1:
        return False
    hy = ctx.home_for_store(v).reshape((1, sr.cols))
    if hy is None or (sr.cols > 1 and hy.strides[1] != 1):
        return False
    if sr.cols == 1:
        xv, dt = ctx.view(hx), sr.x.type.dtype
        emit_full_sum(ctx, sr, ctx.view(hy), n, lambda spans: _load_chunks(ctx, xv, dt, spans, sr))
    else:
        _column_sums(ctx, sr, ctx.view(hx), ctx.view(hy), n // sr.cols)
    return True


def _load_chunks(ctx, xv, dt, spans: list[tuple[int, int]], sr: SpreadReduce) -> list:
    """One SBUF tile and one DMA per (start, count) span of the per-partition elements."""
    b, p = ctx.b, ctx.partitions
    ctx.at(f"load {ctx.name(sr.x)}")
    tiles = []
    for start, cnt in spans:
        t = b.alloc((p, cnt), dt, "sbuf", name="xchunk")
        b.dma_copy(dst=Access(t, (_ds(0, p), _ds(0, cnt))), src=Access(xv, (_ds(0, p), _ds(start, cnt))))
        tiles.append(t)
    return tiles


def _assign(spans, row_bytes: int, t_row: float, v_row: float, v_finish: float) -> list[list[str]]:
    """Engine ("tensor" or "vector") of every row of every chunk: each row of a chunk but the
    last goes to the engine that would finish it first (rows start when their chunk has
    arrived); TensorE also owes one matmul of ``v_finish`` ns once VectorE has rows; the last
    chunk's rows all go to TensorE."""
    arrive = _arrivals([cnt * row_bytes for _, cnt in spans])
    free = {"tensor": 0.0, "vector": 0.0}
    used_vector = False
    out = []
    for k, ((_, cnt), at) in enumerate(zip(spans, arrive)):
        engines = []
        for _ in range(cnt):
            if k == len(spans) - 1:
                engines.append("tensor")
                continue
            t_end = max(free["tensor"], at) + t_row
            v_end = max(free["vector"], at) + v_row
            if not used_vector:  # VectorE's first row also costs TensorE the finishing matmul
                v_end += v_finish
            eng = "tensor" if t_end <= v_end else "vector"
            free[eng] = max(free[eng], at) + (t_row if eng == "tensor" else v_row)
            used_vector = used_vector or eng == "vector"
            engines.append(eng)
        out.append(engines)
    return out


def _column_sums(ctx, sr: SpreadReduce, xv, yv, r: int) -> None:
    b, p, dt, c = ctx.b, ctx.partitions, sr.x.type.dtype, sr.cols
    tg = ctx.target
    spans = chunks(r, c * dt.itemsize)
    ones = b.alloc((p, 1), dt, "sbuf", name="ones")
    b.memset(dst=ones, value=1.0)
    tiles = _load_chunks(ctx, xv, dt, [(s * c, k * c) for s, k in spans], sr)
    ctx.at_op(sr.op)
    fmax = tg.psum_bank_fmax
    blocks = [(j, min(fmax, c - j)) for j in range(0, c, fmax)]
    rate = 4 if dt.itemsize == 4 else 1  # fp32 matmuls run at a quarter rate
    mm_ns = sum(max(w, tg.min_ii_cycles) for _, w in blocks) * 1e9 / tg.tensor_clock_hz
    plan = _assign(spans, c * dt.itemsize, mm_ns * rate, 2 * c * 1e9 / tg.vector_clock_hz, mm_ns * 4)
    ones32 = ones
    if dt.itemsize != 4 and any("vector" in es for es in plan):
        ones32 = b.alloc((p, 1), "f32", "sbuf", name="ones_f32")
        b.memset(dst=ones32, value=1.0)
    acc = None
    ps = [b.alloc((1, fmax), "f32", "psum", name="psum_red") for _ in blocks]
    started = [False] * len(blocks)

    def matmul(stationary, tile, col0: int) -> None:
        for i, (j, w) in enumerate(blocks):
            b.nc_matmul(
                dst=Access(ps[i], (_ds(0, 1), _ds(0, w))),
                stationary=stationary,
                moving=Access(tile, (_ds(0, p), _ds(col0 + j, w))),
                accumulate=started[i],
            )
            started[i] = True

    for k, (t, engines) in enumerate(zip(tiles, plan)):
        if k == len(tiles) - 1 and acc is not None:  # VectorE's rows join the PSUM sum
            matmul(ones32, acc, 0)
        for i, eng in enumerate(engines):
            if eng == "tensor":
                matmul(ones, t, i * c)
                continue
            row = Access(t, (_ds(0, p), _ds(i * c, c)))
            if acc is None:
                acc = b.alloc((p, c), "f32", "sbuf", name="acc")
                b.tensor_copy(dst=Access(acc, (_ds(0, p), _ds(0, c))), src=row)
            else:
                whole = Access(acc, (_ds(0, p), _ds(0, c)))
                b.tensor_tensor(dst=whole, data1=whole, data2=row, op="add")
    out = b.alloc((1, c), sr.op.result.type.dtype, "sbuf", name=sr.op.result.name_hint or "red")
    for i, (j, w) in enumerate(blocks):
        b.tensor_copy(
            dst=Access(out, (_ds(0, 1), _ds(j, w))),
            src=Access(ps[i], (_ds(0, 1), _ds(0, w))),
            engine="scalar",
        )
    ctx.at(f"store {ctx.name(sr.op.result)}")
    b.dma_copy(dst=Access(yv, (_ds(0, 1), _ds(0, c))), src=Access(out, (_ds(0, 1), _ds(0, c))))
