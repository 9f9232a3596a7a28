"""Column variance: ``x.var(axis)`` (``np.var`` / ``np.std``'s variance, any ``ddof``) over a
non-last axis with the input read from HBM once.

The decomposed variance is ``m = sum(x)·(1/n)``, ``v = sum(square(x - m))·c``; over a non-last
axis the fusion groups read ``x`` once for ``m`` and again for ``v`` (2048x4096 f32: 2.0x the
minimum traffic). Here ``x`` is loaded once in column blocks of all rows (column_blocks.py); per
batch and 128-column slice TensorE transposes put the columns on the partitions, four 128-row
pieces per PSUM bank, VectorE's ``bn_stats`` reads each bank and one ``bn_aggr`` gives the
column's mean and variance (the two-pass statistics moments.py uses for rows, no ``E[x²] -
E[x]²`` cancellation). The variances gather in one ``[128, units, 2]`` tile; at the end
TensorE transposes put 128 columns on each partition row, a ScalarE copy applies ``c·n`` (1
unless ``ddof`` is not 0) on the way out of PSUM and one DMA per 128 units stores them.

Matched on the tensor graph: a keepdims float32 sum over one non-last axis of a kernel input,
times ``1/n``, subtracted from the input, squared, summed over the same axis, times a scalar,
returned (or reshaped and returned); nothing else reads the intermediates.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np

from ...ir.graph import ReturnOp
from ...ir.op import Op
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

BANK_PIECES = 4  # 128-row pieces per PSUM bank (512 fp32, bn_stats_fmax)
MAX_UNITS = 2048  # (batch, 128-column slice) results kept on chip: 16 KiB per partition


@dataclass(eq=False)
class ColumnMoments:
    """A float32 variance over a non-last axis claimed here."""

    ops: set
    x: Value
    out: Value
    factor: float  # c·n: the population variance times this is the result
    geom: ColumnBlocks


def _only_use(v: Value) -> Op | None:
    uses = v.uses
    return uses[0].op if len(uses) == 1 else None


def _times_scalar(v: Value) -> tuple[Op, float] | None:
    """(the multiply, its scalar) when ``v``'s only use multiplies it by a float scalar."""
    mul = _only_use(v)
    if not isinstance(mul, T.MulOp):
        return None
    other = mul.operand(1) if mul.operand(0) is v else mul.operand(0)
    full = other.defining_op
    if not isinstance(full, T.FullOp) or other.type.shape != () or not isinstance(full.attrs["value"], float):
        return None
    return mul, full.attrs["value"]


def _returned_reshape(op) -> bool:
    return isinstance(op, T.ReshapeOp) and all(isinstance(u, ReturnOp) for u in op.result.users)


def _is_sum(op, a: int) -> bool:
    return (
        isinstance(op, T.ReduceOp)
        and op.attrs["kind"] == "sum"
        and list(op.attrs["axes"]) == [a]
        and op.attrs["keepdims"]
    )


def _match(r1: Op, budget: int) -> ColumnMoments | None:
    """The ColumnMoments whose first sum is ``r1``, or None."""
    x = r1.operand(0)
    shape = x.type.shape
    if len(r1.attrs["axes"]) != 1 or x.defining_op is not None or x.type.dtype.name != "f32":
        return None
    a = r1.attrs["axes"][0]
    if not _is_sum(r1, a) or a >= len(shape) - 1:
        return None
    b_, n, d = split_axis(shape, a)
    mean = _times_scalar(r1.result)
    if mean is None or abs(mean[1] * n - 1.0) > 1e-6:
        return None
    sub = _only_use(mean[0].result)
    if not isinstance(sub, T.SubOp) or sub.operand(0) is not x or sub.operand(1) is not mean[0].result:
        return None
    sq = _only_use(sub.result)
    if not isinstance(sq, T.SquareOp):
        return None
    r2 = _only_use(sq.result)
    if not _is_sum(r2, a):
        return None
    var = _times_scalar(r2.result)
    if var is None:
        return None
    ops = {r1, mean[0], sub, sq, r2, var[0]}
    out = var[0].result  # a reshape of it into an output stays a view (the driver's)
    readers = [u for u in out.users if not isinstance(u, ReturnOp)]
    if len(readers) > 1 or (readers and not _returned_reshape(readers[0])) or not out.users:
        return None
    if b_ * d // P > MAX_UNITS:
        return None
    geom = plan_blocks(b_, n, d, budget, tiles=2, extra=MAX_UNITS * 8)  # the input, two buffers
    if geom is None:
        return None
    return ColumnMoments(ops, x, out, float(np.float32(var[1] * n)), geom)


def find_column_moments(graph, budget: int, taken: set) -> list[ColumnMoments]:
    """Every float32 variance over a non-last axis of a kernel input, whose result is only
    returned, in ``graph``'s top block (ops in ``taken`` excluded)."""
    out = []
    taken = set(taken)
    for op in graph.body:
        if isinstance(op, T.ReduceOp) and op not in taken:
            cm = _match(op, budget)
            if cm is not None and not (cm.ops & taken):
                out.append(cm)
                taken |= cm.ops
    return out


def emit_column_moments(ctx, cm: ColumnMoments) -> bool:
    """Emit ``cm``; False (nothing emitted) when the input cannot be viewed as blocks of whole
    rows of contiguous columns or the output as rows of 128."""
    g = cm.geom
    hx = input_home(ctx, cm.x, g)
    units = g.outer * g.cols // P
    hy = ctx.home_for_store(cm.out).reshape((units, P)) if hx is not None else None
    if hy is None or hy.strides[1] != 1:
        return False
    b = ctx.b
    q, w, bb = g.q, g.width, g.batches
    kb, kj = g.per_body
    slices = g.cols // P  # 128-column slices per batch
    full = block_window(g)
    ctx.at(f"column variance over {g.outer}x{g.rows}x{g.cols}")
    xv = ctx.view(hx)
    res = b.alloc((P, units, 2), "f32", "sbuf", name="colmoments")
    banks = [range(k, min(q, k + BANK_PIECES)) for k in range(0, q, BANK_PIECES)]
    with ExitStack() as loops:
        i = loop(b, loops, g.trips[0])
        j = loop(b, loops, g.trips[1])
        for r, (rb, rj) in enumerate(g.loads):
            xt = b.alloc((P, bb, q, w), "f32", "sbuf", name="colx")
            b.dma_copy(dst=Access(xt, full), src=Access(xv, load_window(i, j, g, r) + full))
            for bi in range(bb):
                batch = (i * kb + rb) * bb + bi
                for s in range(w // P):
                    stats = b.alloc((P, len(banks), 6), "f32", "sbuf", name="colstats")
                    for k, gs in enumerate(banks):
                        ps = b.alloc((P, len(gs), P), "f32", "psum", name="colt")
                        for gi, gr in enumerate(gs):
                            b.nc_transpose(
                                dst=Access(ps, (_ds(0, P), _ds(gi, 1), _ds(0, P))),
                                data=Access(xt, (_ds(0, P), _ds(bi, 1), _ds(gr, 1), _ds(s * P, P))),
                            )
                        b.bn_stats(
                            dst=Access(stats, (_ds(0, P), _ds(k, 1), _ds(0, 6))),
                            data=Access(ps, (_ds(0, P), _ds(0, len(gs)), _ds(0, P))),
                        )
                    u = batch * slices + (j * kj + rj) * (w // P) + s
                    b.bn_aggr(
                        dst=Access(res, (_ds(0, P), _ds(u, 1), _ds(0, 2))),
                        data=Access(stats, (_ds(0, P), _ds(0, len(banks)), _ds(0, 6))),
                    )
    store_columns(
        b,
        lambda u0, cnt: Access(res, (_ds(0, P), _ds(u0, cnt), _ds(1, 1))),
        units,
        ctx.view(hy),
        cm.factor,
        "colvar",
    )
    return True
