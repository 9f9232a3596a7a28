"""Column sums over a middle axis: ``x.sum(1)`` of a ``(B, S, D)`` kernel input (the leading-axis
sums of a matrix are spread_column_sums.py's).

The fusion groups accumulate such a sum per partition over row tiles, one loop instance per
batch (16x512x256 f32: 208 instructions, 125.8 us scheduled, 5.4x the roofline). Here ``x`` is
loaded in column blocks of all rows (column_blocks.py: whole rows of ``q·D`` contiguous elements
when they fit), and every 128-column slice of every row piece is the *stationary* operand of a
matmul against a ones column: the slice's column sums land on 128 PSUM partitions, the ``q``
pieces of a (batch, slice) unit accumulating into its PSUM column (fp32; each output column only
reads its own input column, so a NaN or inf stays there). One copy brings the ``[128, units]``
sums to SBUF, and per 128 units one TensorE transpose, a copy and one DMA store them as rows.

Matched on the tensor graph: a float32 sum over one middle axis (``B > 1`` dims before it, the
axis and the columns after it multiples of 128) of a kernel input, returned (or reshaped and
returned), with at most ``psum_bank_fmax`` (512) units.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from ...ir.graph import ReturnOp
from ...ir.value import Value
from ...nki.types import Access
from ...nki.types import ds as _ds
from ...tensor import ops as T
from .column_blocks import (
    ColumnBlocks,
    P,
    block_window,
    input_home,
    load_window,
    loop,
    plan_blocks,
    split_axis,
    store_columns,
)
from .leading_column_extremes import emit_leading_column_extremes
from .leading_column_sums import emit_leading_column_sums, plan_fits
from .spread_reduce import claims as spread_claims


@dataclass(eq=False)
class ColumnSums:
    """A float32 sum over a middle axis claimed here."""

    ops: set
    x: Value
    out: Value
    geom: ColumnBlocks | None  # None: the first axis of a matrix, in row pieces
    kind: str = "sum"  # sum; max or min over the first axis of a matrix


def _returned(v: Value) -> bool:
    """``v`` is only returned, directly or through one reshape that is only returned."""
    if not v.users:
        return False
    for u in v.users:
        if isinstance(u, ReturnOp):
            continue
        if not isinstance(u, T.ReshapeOp) or len(v.users) != 1 or not u.result.users:
            return False
        if any(not isinstance(w, ReturnOp) for w in u.result.users):
            return False
    return True


def find_column_sums(graph, budget: int, units_max: int, taken: set) -> list[ColumnSums]:
    """Every float32 sum over a middle axis of a kernel input, only returned, in ``graph``'s top
    block (ops in ``taken`` excluded); and over the first axis of a matrix the spread lowering
    does not take, also max and min."""
    out = []
    for op in graph.body:
        if not isinstance(op, T.ReduceOp) or op in taken or op.attrs["kind"] not in ("sum", "max", "min"):
            continue
        x = op.operand(0)
        if len(op.attrs["axes"]) != 1 or x.defining_op is not None or x.type.dtype.name != "f32":
            continue
        a = op.attrs["axes"][0]
        b_, n, d = split_axis(x.type.shape, a)
        if a >= x.type.rank - 1 or b_ * d // P > units_max or not _returned(op.result):
            continue
        if b_ == 1:  # x.sum(0) of a matrix: spread_reduce's when it fits SBUF, else streamed
            if spread_claims(op, P) or not plan_fits(n, d, budget):
                continue
            out.append(ColumnSums({op}, x, op.result, None, op.attrs["kind"]))
            continue
        if op.attrs["kind"] != "sum":
            continue
        geom = plan_blocks(b_, n, d, budget, tiles=2, extra=0)  # the input, two buffers
        if geom is not None:
            out.append(ColumnSums({op}, x, op.result, geom))
    return out


def emit_column_sums(ctx, cs: ColumnSums) -> bool:
    """Emit ``cs``; False (nothing emitted) when the input cannot be viewed as blocks of whole
    rows of contiguous columns or the output as rows of 128."""
    if cs.geom is None:
        return _emit_leading(ctx, cs)
    g = cs.geom
    hx = input_home(ctx, cs.x, g)
    units = g.outer * g.cols // P
    hy = ctx.home_for_store(cs.out).reshape((units, P)) if hx is not None else None
    if hy is None or hy.strides[1] != 1:
        return False
    b = ctx.b
    q, w, bb = g.q, g.width, g.batches
    kb, kj = g.per_body
    slices = g.cols // P
    full = block_window(g)
    ctx.at(f"column sums over {g.outer}x{g.rows}x{g.cols}")
    xv = ctx.view(hx)
    ones = b.alloc((P, 1), "f32", "sbuf", name="ones")
    b.memset(dst=Access(ones, (_ds(0, P), _ds(0, 1))), value=1.0)
    acc = b.alloc((P, units), "f32", "psum", name="colsums")
    with ExitStack() as loops:
        i = loop(b, loops, g.trips[0])
        j = loop(b, loops, g.trips[1])
        for r, (rb, rj) in enumerate(g.loads):
            xt = b.alloc((P, bb, q, w), "f32", "sbuf", name="colx")
            b.dma_copy(dst=Access(xt, full), src=Access(xv, load_window(i, j, g, r) + full))
            for bi in range(bb):
                for s in range(w // P):
                    u = ((i * kb + rb) * bb + bi) * slices + (j * kj + rj) * (w // P) + s
                    for gr in range(q):
                        b.nc_matmul(
                            dst=Access(acc, (_ds(0, P), _ds(u, 1))),
                            stationary=Access(xt, (_ds(0, P), _ds(bi, 1), _ds(gr, 1), _ds(s * P, P))),
                            moving=Access(ones, (_ds(0, P), _ds(0, 1))),
                            accumulate=gr > 0,
                        )
    sums = b.alloc((P, units), "f32", "sbuf", name="colsums_sb")
    b.tensor_copy(dst=Access(sums, (_ds(0, P), _ds(0, units))), src=Access(acc, (_ds(0, P), _ds(0, units))))
    store_columns(
        b, lambda u0, cnt: Access(sums, (_ds(0, P), _ds(u0, cnt))), units, ctx.view(hy), 1.0, "colsum"
    )
    return True


def _emit_leading(ctx, cs: ColumnSums) -> bool:
    """x.sum(0) (max, min) of an ``(N, D)`` matrix in row pieces (leading_column_sums.py,
    leading_column_extremes.py)."""
    _, n, d = split_axis(cs.x.type.shape, 0)
    hx = ctx.home(cs.x).reshape((P, n // P, d)) if cs.x in ctx.homes else None
    if hx is None or hx.strides[2] != 1:
        return False
    hy = ctx.home_for_store(cs.out).reshape((d // P, P))
    if hy is None or hy.strides[1] != 1:
        return False
    if cs.kind == "sum":
        ctx.at(f"column sums over {n}x{d}")
        emit_leading_column_sums(ctx, ctx.view(hx), ctx.view(hy), n, d)
    else:
        ctx.at(f"column {cs.kind} over {n}x{d}")
        emit_leading_column_extremes(ctx, ctx.view(hx), ctx.view(hy), n, d, cs.kind)
    return True
