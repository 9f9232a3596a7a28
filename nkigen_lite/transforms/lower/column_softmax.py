"""Column softmax: softmax over a non-last axis (``axis=0`` of a matrix, the middle axis of a
``(B, S, D)`` array) with the input read from HBM once.

The fusion-group lowering reduces such an axis over the partitions and loops: the column max,
the sum of ``exp(x - max)`` and the normalising pass each read the input again (2048x4096 f32:
three reads, 2.0x the minimum traffic). Here the input is seen as ``(B, N, D)`` (``N`` the
reduced axis, ``N = 128·q``) and loaded in blocks of ``bb`` batches and ``W`` columns, partition
``p`` holding the ``q`` consecutive rows ``p·q ... p·q + q - 1`` (one DMA per block; runs of
``q·D`` contiguous elements when ``W = D``). Per batch and 128-column slice:

1. TensorE transposes move the slice's columns onto the partitions, up to four 128-row pieces
   (one PSUM bank) at a time; per bank VectorE takes the negated max (floored at the lowest
   finite f32, as row_split.py does, so an all ``-inf`` piece sums 0) and ScalarE writes
   ``exp(x - max)`` to SBUF with its fused row sum;
2. per column the banks combine as the online softmax does: ``M = max m_k``,
   ``S = Σ s_k·exp(m_k - M)``, and bank ``k`` is scaled by ``exp(m_k - M) / S`` (one
   per-partition multiply, VectorE or ScalarE);
3. TensorE transposes the scaled values back (transposes are data movement: a NaN stays in its
   column) and a PSUM -> SBUF copy puts them in the output block, stored with one DMA.

The work is cut into units (batch, 128-column slice), software-pipelined in program order
(every engine runs its stream in order): unit ``u``'s transposes in, max and exp; unit
``u - SCALE_LAG``'s combine and scaling; unit ``u - LAG``'s transposes back and copies. A loop
body unrolls up to ``MAX_BLOCKS_PER_BODY`` loads as one such sequence. 2048x4096 f32 (axis 0):
611.8 -> 272.3 us scheduled (3.28x -> 1.46x the roofline, traffic 2.00 -> 1.00); 16x512x256 f32
(axis 1): 334.8 -> 64.0 us (7.19x -> 1.37x, traffic 2.38 -> 1.00).

Matched on the tensor graph by row_split.match_softmax with the axis given: a float32 softmax
of a kernel input whose result is only returned, the reduced axis a multiple of 128 (at most
``MAX_ROWS``) and the columns after it a multiple of 128.
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
    blocks_view,
    input_home,
    load_window,
    loop,
    plan_blocks,
    split_axis,
)
from .row_split import LOWEST, match_softmax

MAX_ROWS = 4096  # the exp tile of one column slice holds all rows: N·4 bytes per partition
BANK_PIECES = 4  # 128-row pieces per PSUM bank (512 fp32)
SCALE_LAG = 1  # units between one's transposes in and its scaling
LAG = 3  # units (batch, column slice) between one's transposes in and its transposes back


@dataclass(eq=False)
class ColumnSoftmax:
    """A float32 softmax over a non-last axis claimed here."""

    ops: set
    x: Value
    out: Value
    geom: ColumnBlocks


def find_column_softmaxes(graph, budget: int, taken: set) -> list[ColumnSoftmax]:
    """Every float32 softmax over a non-last axis of a kernel input, whose result is only
    returned, in ``graph``'s top block (ops in ``taken`` excluded)."""
    out = []
    taken = set(taken)
    for op in graph.body:
        if not isinstance(op, T.ReduceOp) or op in taken or len(op.attrs["axes"]) != 1:
            continue
        a = op.attrs["axes"][0]
        shape = op.operand(0).type.shape
        if a >= len(shape) - 1:
            continue

        def accept(ops, x, y, func, a=a, shape=shape):
            if (
                func != "exp"
                or x.defining_op is not None
                or any(not isinstance(u, ReturnOp) for u in y.users)
            ):
                return None
            if x.type.dtype.name != "f32" or y.type.dtype.name != "f32" or x.type.shape != y.type.shape:
                return None
            b_, n, d = split_axis(shape, a)
            if n > MAX_ROWS:
                return None
            # input and output blocks, two buffers each, and three exp tiles of all rows
            geom = plan_blocks(b_, n, d, budget, tiles=4, extra=3 * n * 4)
            return ColumnSoftmax(ops, x, y, geom) if geom is not None else None

        cs = match_softmax(op, accept, axis=a)
        if cs is not None and not (cs.ops & taken):
            out.append(cs)
            taken |= cs.ops
    return out


def _col(t, k: int = 0) -> Access:
    return Access(t, (_ds(0, P), _ds(k, 1)))


def emit_column_softmax(ctx, cs: ColumnSoftmax) -> bool:
    """Emit ``cs``; False (nothing emitted) when the input or output cannot be viewed as
    blocks of whole rows of contiguous columns.

    A loop body holds ``per_body`` blocks, software-pipelined as one sequence of units (batch,
    128-column slice): the next block's load is issued when a block's first unit starts, a
    unit's transposes back come ``LAG`` units after its transposes in, and a block is stored
    after its last unit (engines run their streams in order, so a unit waiting on its chain
    of cross-engine steps would otherwise stall the next one)."""
    g = cs.geom
    hx = input_home(ctx, cs.x, g)
    hy = blocks_view(ctx.home_for_store(cs.out), g) if hx is not None else None
    if hy is None:
        return False
    b = ctx.b
    q, w, bb = g.q, g.width, g.batches
    blocks = g.loads
    full = block_window(g)
    ctx.at(f"column softmax over {g.outer}x{g.rows}x{g.cols}")
    xv, yv = ctx.view(hx), ctx.view(hy)
    with ExitStack() as loops:
        i = loop(b, loops, g.trips[0])
        j = loop(b, loops, g.trips[1])
        xs, ys = [], []

        def at(r: int) -> tuple:
            return load_window(i, j, g, r)

        def load(r: int) -> None:
            xt = b.alloc((P, bb, q, w), "f32", "sbuf", name="colx")
            b.dma_copy(dst=Access(xt, full), src=Access(xv, at(r) + full))
            xs.append(xt)
            ys.append(b.alloc((P, bb, q, w), "f32", "sbuf", name="coly"))

        k = len(blocks)
        units = [(r, bi, s) for r in range(k) for bi in range(bb) for s in range(w // P)]
        per_block = bb * (w // P)
        load(0)
        fronts = {}
        for u in range(len(units) + LAG):
            if u < len(units):
                r, bi, s = units[u]
                if u % per_block == 0 and r + 1 < k:
                    load(r + 1)
                fronts[u] = _front(b, xs[r], (bi, s), q)
            if 0 <= u - SCALE_LAG < len(units):
                _scale(b, q, fronts[u - SCALE_LAG], u - SCALE_LAG)
            if u >= LAG:
                r, bi, s = units[u - LAG]
                _back(b, ys[r], (bi, s), q, fronts.pop(u - LAG)[0], u - LAG)
                if (u - LAG) % per_block == per_block - 1:
                    b.dma_copy(dst=Access(yv, at(r) + full), src=Access(ys[r], full))
    return True


def _pieces(q: int) -> list[range]:
    """The 128-row pieces ``g`` of a column slice, grouped by PSUM bank."""
    return [range(k, min(q, k + BANK_PIECES)) for k in range(0, q, BANK_PIECES)]


def _front(b, xt, unit, q: int):
    """Transposes, per-bank negated max and exp with its sum of one (batch, column slice):
    returns (exp tile [128 cols, q, 128 rows], negated maxima [128, banks], sums [128, banks]).
    Each bank's maximum is a tile of its own (VectorE writing the next one does not wait for
    ScalarE's read of this one); with several banks it is copied into the combined tile."""
    bi, s = unit
    banks = _pieces(q)
    nk = len(banks)
    e = b.alloc((P, q, P), "f32", "sbuf", name="colexp")
    nm = b.alloc((P, nk), "f32", "sbuf", name="colnegmax") if nk > 1 else None
    sm = b.alloc((P, nk), "f32", "sbuf", name="colsum")
    for k, gs in enumerate(banks):
        ps = b.alloc((P, len(gs), P), "f32", "psum", name="colt")
        for gi, g in enumerate(gs):
            b.nc_transpose(
                dst=Access(ps, (_ds(0, P), _ds(gi, 1), _ds(0, P))),
                data=Access(xt, (_ds(0, P), _ds(bi, 1), _ds(g, 1), _ds(s * P, P))),
            )
        whole = Access(ps, (_ds(0, P), _ds(0, len(gs)), _ds(0, P)))
        mk = b.alloc((P, 1), "f32", "sbuf", name="colbankmax")
        b.tensor_reduce(dst=_col(mk), op="maximum", data=whole, axis=(1, 2), negate=True, keepdims=True)
        b.tensor_scalar(dst=_col(mk), data=_col(mk), op0="minimum", operand0=-LOWEST)
        b.activation(
            dst=Access(e, (_ds(0, P), _ds(gs.start, len(gs)), _ds(0, P))),
            op="exp",
            data=whole,
            bias=_col(mk),
            reduce_res=_col(sm, k),
        )
        if nm is not None:
            b.tensor_copy(dst=_col(nm, k), src=_col(mk))
    return e, nm, sm


def _scale(b, q: int, st, u: int) -> None:
    """Combine the banks of one (batch, column slice) and scale its exp tile in place."""
    e, nm, sm = st
    banks = _pieces(q)
    nk = len(banks)
    d = b.alloc((P, nk), "f32", "sbuf", name="colscale")
    if nk == 1:
        b.activation(dst=_col(d), op="reciprocal", data=_col(sm))
    else:
        all_k = Access(nm, (_ds(0, P), _ds(0, nk)))
        nmax = b.alloc((P, 1), "f32", "sbuf", name="colnmax")
        b.tensor_reduce(dst=_col(nmax), op="minimum", data=all_k, axis=(1,), keepdims=True)
        dk = Access(d, (_ds(0, P), _ds(0, nk)))
        # exp(m_k - M) = exp(-nm_k + nM)
        b.activation(dst=dk, op="exp", data=all_k, scale=-1.0, bias=_col(nmax))
        tot = b.alloc((P, nk), "f32", "sbuf", name="colpart")
        b.tensor_tensor(
            dst=Access(tot, (_ds(0, P), _ds(0, nk))),
            data1=dk,
            data2=Access(sm, (_ds(0, P), _ds(0, nk))),
            op="multiply",
        )
        r = b.alloc((P, 1), "f32", "sbuf", name="coltotal")
        b.tensor_reduce(
            dst=_col(r), op="add", data=Access(tot, (_ds(0, P), _ds(0, nk))), axis=(1,), keepdims=True
        )
        b.activation(dst=_col(r), op="reciprocal", data=_col(r))
        b.tensor_scalar(dst=dk, data=dk, op0="multiply", operand0=_col(r))
    for k, gs in enumerate(banks):  # every bank scaled before the transposes wait on one
        ek = Access(e, (_ds(0, P), _ds(gs.start, len(gs)), _ds(0, P)))
        if (u + k) % 2:
            b.activation(dst=ek, op="copy", data=ek, scale=_col(d, k))
        else:
            b.tensor_scalar(dst=ek, data=ek, op0="multiply", operand0=_col(d, k))


def _back(b, yt, unit, q: int, e, u: int) -> None:
    """Transpose the scaled exp tile ``e`` of one (batch, column slice) back into ``yt``."""
    bi, s = unit
    for k, gs in enumerate(_pieces(q)):
        po = b.alloc((P, len(gs), P), "f32", "psum", name="colback")
        for gi, g in enumerate(gs):
            b.nc_transpose(
                dst=Access(po, (_ds(0, P), _ds(gi, 1), _ds(0, P))),
                data=Access(e, (_ds(0, P), _ds(g, 1), _ds(0, P))),
            )
        b.tensor_copy(
            dst=Access(yt, (_ds(0, P), _ds(bi, 1), _ds(gs.start, len(gs)), _ds(s * P, P))),
            src=Access(po, (_ds(0, P), _ds(0, len(gs)), _ds(0, P))),
            engine="scalar" if (u + k) % 2 == 0 else "vector",
        )
