"""Spread reductions: a sum of a kernel input over all its axes (``x.sum()``) or over its leading
axes (column sums, ``x.sum(0)``) with the input spread over all partitions in a few large DMAs
and the work shared between engines.

The generic lowering (reduce_acc.py) loads one 128-row tile per loop iteration (512x512 f32:
four DMAs of 2 KiB per partition; 1024x256: eight of 1 KiB) and adds every tile into the
accumulator on VectorE, one after another, so the fixed cost of each DMA and every VectorE pass
sits on the critical path. Here the input, row-major contiguous, is seen as ``[P, F]``:
partition ``p`` holds the ``F`` contiguous elements ``p·F ... p·F + F - 1`` (for column sums, the
``r = R / P`` whole rows ``p·r ... p·r + r - 1`` of ``C`` columns), loaded in a few chunks along
``F``, all issued up front: large *bulk* chunks first, then small *tail* chunks, so that little
work is left when the last byte arrives (under the cost model the first load's issue and
first-byte latency and the store's are fixed costs no plan avoids). The chunk plan is the
candidate whose estimated end (spread_timing.py) is earliest:

- **full sum** (spread_full_sum.py): bulk chunks summed per partition by VectorE and ScalarE,
  each partial added over the partitions by a ones-matmul into one PSUM row; tail chunks summed
  over the partitions by TensorE directly; one ``tensor_reduce`` of the PSUM row;
- **column sums** (spread_column_sums.py): bulk rows summed over the partitions by ones-matmuls
  (TensorE) or added into an fp32 accumulator (VectorE) that one more ones-matmul adds in; tail
  chunks (the last one the last row's last 64 columns, a PSUM window of its own) by TensorE; each
  PSUM window copied to SBUF as soon as it is complete.

TensorE's matmuls are emitted in the order their inputs are estimated to be ready.
Results are fp32 sums (the ones-matmul sums in fp32 PSUM) in a different order than NumPy's.
The pattern is claimed on the tensor graph (``find_spread_reduces``): a ``sum`` whose operand is
a kernel input and whose result is only returned (maybe through a reshape); inputs between ``MIN_BYTES`` and
``MAX_BYTES`` per partition (larger ones keep the looped lowering, which streams them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.graph import ReturnOp
from ...ir.value import Value
from ...nki.types import Access
from ...nki.types import ds as _ds
from ...tensor import ops as T
from .spread_column_sums import emit_column_sums
from .spread_full_sum import emit_full_sum

MIN_BYTES = 512  # per partition: below this the looped lowering is as good
MAX_BYTES = 64 * 1024  # per partition: above this the input streams through a loop instead
MAX_ROWS_PER_PARTITION = 64  # column sums: rows per partition (one instruction each)
MAX_COLUMNS = 2048  # column sums: PSUM rows of 512 fp32 each, at most 4 banks


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


def claims(op, partitions: int) -> bool:
    """The spread lowering claims ``op`` (find_spread_reduces would list it)."""
    return _claim(op, partitions) is not None


def find_spread_reduces(graph, partitions: int) -> list[SpreadReduce]:
    """Every sum of ``graph``'s top block the spread lowering claims."""
    out = []
    for op in graph.body:
        sr = _claim(op, partitions)
        if sr is not None:
            out.append(sr)
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
    xv, dt = ctx.view(hx), sr.x.type.dtype

    def load(spans):
        return _load_chunks(ctx, xv, dt, spans, sr)

    if sr.cols == 1:
        emit_full_sum(ctx, sr, ctx.view(hy), n, load)
    else:
        emit_column_sums(ctx, sr, hy, n // sr.cols, load)
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
