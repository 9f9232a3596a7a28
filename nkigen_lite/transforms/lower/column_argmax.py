"""Column argmax: ``np.argmax(x, axis)`` over a non-last axis (decomposed to ``topk(x, 1)`` whose
values nothing reads) with the input read from HBM once.

The native top-k runs along rows; over a non-last axis the input was moved through HBM
(2048x4096 f32: 3.0x the minimum traffic, 2,304 instructions, 992.7 us scheduled). Here ``x``
is loaded in column blocks of all rows (column_blocks.py) with *interleaved* rows (partition
``p`` holds rows ``p, p + 128, ...``), so that a TensorE transpose of row piece ``g`` puts rows
``128·g ... 128·g + 127`` in order along the free axis and a PSUM bank of four pieces holds
rows ``512·k ...`` in order: the first maximum of a bank is the first in row order. Per
128-column slice and bank, as topk_nan.py does for rows (the top-8 instructions do not define
NaN):

- ScalarE copies the bank to SBUF, where GpSimd marks the NaNs (``x != x``);
- VectorE's select makes the keys (NaN -> -inf) reading the bank from PSUM and the mask from
  SBUF (one input stream per memory), with the keys' max in its ``reduce_res``;
  ``find_index8`` gives the first position of that max, and ``find_index8`` of the mask the
  first NaN's (or the all-ones sentinel);
- per column the banks' candidates merge to the first maximum (topk_merge.merge_top1) and the
  first NaN, if any, wins (topk_nan.first_nan_wins), as in NumPy.

The indices (fp32, exact below 2**24) gather in a ``[128, units]`` tile, transposed into rows
and stored as int32 at the end.

Matched on the tensor graph: ``topk(x, 1)`` over a non-last axis of a float32 kernel input
whose values nothing reads and whose indices are returned (or reshaped and returned).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from ...ir.dtypes import float32, uint8, uint32
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
from .topk_merge import merge_top1
from .topk_nan import NO_NAN, first_nan_wins, ones8

BANK_PIECES = 4  # 128-row pieces per PSUM bank (512 fp32)
MAX_UNITS = 2048  # (batch, 128-column slice) indices kept on chip: 8 KiB per partition
SCRATCH_BYTES = 3 * 512 * 9  # per bank: the SBUF copy, the keys, the mask (a few in flight)


@dataclass(eq=False)
class ColumnArgmax:
    """A float32 argmax over a non-last axis claimed here."""

    ops: set
    x: Value
    out: Value  # the int32 indices (keepdims shape)
    geom: ColumnBlocks


def _returned(v: Value) -> bool:
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


def match_column_argmax(op: T.TopkOp, budget: int) -> ColumnArgmax | None:
    """The ColumnArgmax of ``op`` (topk.lower_topk asks before its row lowerings), or None."""
    x = op.operand(0)
    a = op.attrs["axis"]
    if op.attrs["k"] != 1 or x.defining_op is not None or x.type.dtype.name != "f32" or a >= x.type.rank - 1:
        return None
    if op.results[0].uses or not _returned(op.results[1]):
        return None
    b_, n, d = split_axis(x.type.shape, a)
    if b_ * d // P > MAX_UNITS:
        return None
    # VectorE binds (three passes over the data): 128-column loads start it earliest; their
    # 512 B descriptors (DMA efficiency 0.59) still move the input in less time than VectorE takes
    geom = plan_blocks(b_, n, d, budget, tiles=2, extra=SCRATCH_BYTES + MAX_UNITS * 4, widest=P)
    return ColumnArgmax({op}, x, op.results[1], geom) if geom is not None else None


def emit_column_argmax(ctx, ca: ColumnArgmax) -> bool:
    """Emit ``ca``; False (nothing emitted) when the input cannot be viewed as blocks of whole
    rows of contiguous columns or the output as rows of 128."""
    g = ca.geom
    hx = input_home(ctx, ca.x, g, interleaved=True)
    units = g.outer * g.cols // P
    hy = ctx.home_for_store(ca.out).reshape((units, P)) if hx is not None else None
    if hy is None or hy.strides[1] != 1:
        return False
    b = ctx.b
    q, w, bb = g.q, g.width, g.batches
    kb, kj = g.per_body
    slices = g.cols // P
    banks = [range(k, min(q, k + BANK_PIECES)) for k in range(0, q, BANK_PIECES)]
    nk = len(banks)
    full = block_window(g)
    ctx.at(f"column argmax over {g.outer}x{g.rows}x{g.cols}")
    xv = ctx.view(hx)
    res = b.alloc((P, units), float32, "sbuf", name="colargmax")
    ones = ones8(ctx, P)
    first_rows = b.alloc((P, nk), float32, "sbuf", name="bank_first_row")  # 512·k: bank k's row 0
    starts = Access(first_rows, (_ds(0, P), _ds(0, nk)))
    b.iota(dst=starts, pattern=[[BANK_PIECES * P, nk]])
    with ExitStack() as loops:
        i = loop(b, loops, g.trips[0])
        j = loop(b, loops, g.trips[1])
        for r, (rb, rj) in enumerate(g.loads):
            xt = b.alloc((P, bb, q, w), float32, "sbuf", name="colx")
            b.dma_copy(dst=Access(xt, full), src=Access(xv, load_window(i, j, g, r) + full))
            for bi in range(bb):
                for s in range(w // P):
                    u = ((i * kb + rb) * bb + bi) * slices + (j * kj + rj) * (w // P) + s
                    _unit(ctx, xt, bi, s, banks, ones, starts, Access(res, (_ds(0, P), _ds(u, 1))), nk)
    out = ctx.view(hy)
    store_columns(b, lambda u0, cnt: Access(res, (_ds(0, P), _ds(u0, cnt))), units, out, 1.0, "colidx", "i32")
    return True


def _whole(t, size: int) -> Access:
    """All ``size`` elements of every partition of the 2-D tile ``t``."""
    return Access(t, (_ds(0, P), _ds(0, size)))


def _unit(ctx, xt, bi: int, s: int, banks, ones, starts: Access, dst: Access, nk: int) -> None:
    """The first maximum's row (or the first NaN's) of one (batch, 128-column slice) into the
    fp32 column ``dst``."""
    b = ctx.b
    tw = ctx.target.top8_width
    vals = b.alloc((P, nk * tw), float32, "sbuf", name="colkeymax")  # 8 per bank, first its max
    b.memset(dst=Access(vals, (_ds(0, P), _ds(0, nk * tw))), value=0.0, engine="gpsimd")
    ci = b.alloc((P, nk), float32, "sbuf", name="colcand_i")
    cn = b.alloc((P, nk), float32, "sbuf", name="colcand_nan")
    pos = b.alloc((P, nk * tw), uint32, "sbuf", name="pos8")
    npos = b.alloc((P, nk * tw), uint32, "sbuf", name="nan_pos")
    for k, gs in enumerate(banks):
        size = len(gs) * P
        ps = b.alloc((P, size), float32, "psum", name="colt")
        for gi, gr in enumerate(gs):
            b.nc_transpose(
                dst=Access(ps, (_ds(0, P), _ds(gi * P, P))),
                data=Access(xt, (_ds(0, P), _ds(bi, 1), _ds(gr, 1), _ds(s * P, P))),
            )
        bank = Access(ps, (_ds(0, P), _ds(0, size)))
        copy = b.alloc((P, size), float32, "sbuf", name="colbank")
        b.activation(dst=Access(copy, (_ds(0, P), _ds(0, size))), op="copy", data=bank)
        mask = b.alloc((P, size), uint8, "sbuf", name="nan_mask")
        whole_copy = Access(copy, (_ds(0, P), _ds(0, size)))
        b.tensor_tensor(
            dst=Access(mask, (_ds(0, P), _ds(0, size))),
            data1=whole_copy,
            data2=whole_copy,
            op="not_equal",
            engine="gpsimd",
        )
        keys = b.alloc((P, size), float32, "sbuf", name="nan_free")
        km = Access(vals, (_ds(0, P), _ds(k * tw, tw)))
        b.select(
            dst=Access(keys, (_ds(0, P), _ds(0, size))),
            predicate=Access(mask, (_ds(0, P), _ds(0, size))),
            on_true=bank,
            on_false=float("-inf"),
            reverse_pred=True,
            reduce_res=Access(vals, (_ds(0, P), _ds(k * tw, 1))),
        )
        b.find_index8(dst=Access(pos, (_ds(0, P), _ds(k * tw, tw))), data=_whole(keys, size), vals=km)
        b.find_index8(
            dst=Access(npos, (_ds(0, P), _ds(k * tw, tw))),
            data=Access(mask, (_ds(0, P), _ds(0, size))),
            vals=ones,
        )
    # every bank's candidates at once: position + the bank's first row (NaN: at most NO_NAN)
    all_k = (_ds(0, P), _ds(0, nk))
    first = (_ds(0, P), _ds(0, nk, tw))
    b.tensor_tensor(dst=Access(ci, all_k), data1=Access(pos, first), data2=starts, op="add")
    b.tensor_tensor(dst=Access(cn, all_k), data1=Access(npos, first), data2=starts, op="add")
    b.tensor_scalar(dst=Access(cn, all_k), data=Access(cn, all_k), op0="minimum", operand0=NO_NAN)
    got = b.alloc((P, 1), float32, "sbuf", name="colfirstmax")
    cv = Access(vals, (_ds(0, P), _ds(0, nk, tw)))
    merge_top1(ctx, cv, Access(ci, (_ds(0, P), _ds(0, nk))), got, P, nk)
    first_nan_wins(ctx, Access(cn, (_ds(0, P), _ds(0, nk))), got, dst, P)
