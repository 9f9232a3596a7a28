"""Row split: softmax and log_softmax over a few long rows (decode logits, vocab softmax of
1-32 rows) spread each row over the partitions.

The row-major lowering puts each row on one partition, so 4 rows of 151,936 columns run on 4
of 128 partitions (and their DMAs on 1 of 16 DMA engines). Here row ``r`` is split into ``C``
contiguous chunks of ``W = N / C`` columns, chunk ``c`` on partition ``c``: the input is loaded
once into SBUF (``[C, W]`` per row, each partition reading ``W`` contiguous elements), and:

1. per partition and row (per block of columns, with the online max-and-sum of ``online.py``):
   ``m = max(x)``, ``s = sum(exp(x - m))`` (the exp's fused ``reduce_res``);
2. across partitions (``partition_combine.py``, TensorE transposes): ``M = max_c m``,
   ``S = sum_c s · exp(m - M)``, and the per-row shift ``b = -(M + log S)`` broadcast back to
   every partition;
3. the normalising pass reads the resident input: ``y = exp(x + b)`` (softmax) or ``x + b``
   (log_softmax), one ScalarE activation per block, each stored as soon as it is computed.

HBM traffic is the minimum (the input read once, the output written once). The pattern is
matched on the tensor graph (``find_row_splits``: a row max, ``x - max``, its exp and their
row sum, then ``exp / sum`` or ``(x - max) - log(sum)``, with optional float casts of the input
and of the result, nothing else reading the intermediates); the driver keeps the matched ops
out of other fusion groups and emits them here at the first one's place.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.op import Op
from ...ir.value import Value
from ...nki.types import Access
from ...nki.types import ds as _ds
from ...tensor import ops as T
from .homes import HbmHome
from .partition_combine import transpose_to_sbuf

MAX_ROWS = 32  # more rows than this fill the partitions well enough row by row
MIN_COLUMNS_PER_PARTITION = 64
BLOCK_BYTES = 8192  # target bytes per partition of one block (one DMA, one activation)
MIN_BLOCK_BYTES = 512  # never split a row into DMA descriptors shorter than this
MIN_BLOCKS = 4  # at least this many blocks over all rows when the rows allow it
LOWEST = -3.4028234663852886e38  # the lowest finite f32: floor of the running maxima


@dataclass(eq=False)
class RowSplit:
    """A softmax / log_softmax over few long rows claimed by the row split."""

    ops: set  # the tensor ops it computes (each in a fusion group of its own until emitted)
    x: Value  # the value read from HBM (before an optional cast to f32)
    out: Value  # the value stored (after an optional cast)
    func: str  # the normalising activation: "exp" (softmax) or "copy" (log_softmax)
    rows: int
    parts: int  # C: partitions per row
    width: int  # W: columns per partition


def _def(v: Value, cls) -> Op | None:
    op = v.defining_op
    return op if isinstance(op, cls) else None


def _only_use(v: Value) -> Op | None:
    uses = v.uses
    return uses[0].op if len(uses) == 1 else None


def _source(v: Value) -> tuple[Value, list[Op]]:
    """(value read, cast ops on the way): ``v`` itself or the operand of a float cast of it."""
    c = _def(v, T.CastOp)
    if c is not None and c.operand(0).type.dtype.is_float and v.type.dtype.is_float:
        return c.operand(0), [c]
    return v, []


def _is_row(op: Op, kind: str, axis: int | None = None) -> bool:
    """``op`` is a keepdims float reduction of ``kind`` over the one axis ``axis`` (the last
    axis when None)."""
    if not isinstance(op, T.ReduceOp):
        return False
    x = op.operand(0)
    return (
        op.attrs["kind"] == kind
        and list(op.attrs["axes"]) == [x.type.rank - 1 if axis is None else axis]
        and op.attrs["keepdims"]
        and x.type.dtype.is_float
    )


def _tail(out: Value, m: Op, s: Op, xsrc: Value) -> tuple[str, set[Op]] | None:
    """(activation, ops) when ``out`` is softmax / log_softmax of ``xsrc`` given the row max
    ``m`` and the sum ``s``, computed by exactly ``ops``; else None."""
    ops: set[Op] = set()
    c = _def(out, T.CastOp)
    v = out
    if c is not None and out.type.dtype.is_float and c.operand(0).type.dtype.is_float:
        ops.add(c)
        v = c.operand(0)
    t = v.defining_op

    def shifted(d: Value) -> bool:  # d = x - m (x possibly a cast of xsrc)
        sub = _def(d, T.SubOp)
        if sub is None or sub.operand(1) is not m.result:
            return False
        x, casts = _source(sub.operand(0))
        if x is not xsrc:
            return False
        ops.update([sub, *casts])
        return True

    if isinstance(t, (T.MulOp, T.DivOp)):
        a, b = t.operands
        if isinstance(t, T.MulOp) and _def(a, T.ReciprocalOp) is not None:
            a, b = b, a
        if isinstance(t, T.MulOp):
            r = _def(b, T.ReciprocalOp)
            if r is None or r.operand(0) is not s.result:
                return None
            ops.add(r)
        elif b is not s.result:
            return None
        e = _def(a, T.ExpOp)
        if e is None or not shifted(e.operand(0)):
            return None
        ops.update([t, e])
        return "exp", ops
    if isinstance(t, T.SubOp):
        lg = _def(t.operand(1), T.LogOp)
        if lg is None or lg.operand(0) is not s.result or not shifted(t.operand(0)):
            return None
        ops.update([t, lg])
        return "copy", ops
    return None


def _out_of(s: Op) -> Value | None:
    """The value a softmax / log_softmax ending at the sum ``s`` produces (before checks)."""
    u = _only_use(s.result)
    if isinstance(u, (T.ReciprocalOp, T.LogOp)):
        u = _only_use(u.result)
    elif not isinstance(u, T.DivOp):
        return None
    if u is None:
        return None
    c = _only_use(u.result)
    return c.result if isinstance(c, T.CastOp) else u.result


def _parts(n: int, partitions: int, itemsize: int) -> int:
    """Partitions per row: the largest divisor of ``n`` up to ``partitions`` leaving each
    partition at least ``MIN_BLOCK_BYTES`` contiguous bytes (0 if it is below half of them)."""
    for c in range(partitions, partitions // 2 - 1, -1):
        if n % c == 0 and (n // c) * itemsize >= MIN_BLOCK_BYTES:
            return c
    return 0


def match_softmax(m: Op, accept, axis: int | None = None):
    """``accept(ops, x, out, func)`` for the softmax / log_softmax whose row max is ``m`` (its
    tensor ops, the value read, the value stored, the normalising activation), the first
    non-None answer; None when ``m`` starts no such pattern. ``axis``: the one axis reduced
    (the last axis when None; column_softmax.py matches other axes)."""
    if not _is_row(m, "max", axis):
        return None
    xv = m.operand(0)
    x, casts = _source(xv)
    for u in m.result.uses:
        sub = u.op
        if not isinstance(sub, T.SubOp) or sub.operand(1) is not m.result or sub.operand(0) is not xv:
            continue
        for eu in sub.result.uses:
            e = eu.op
            if not isinstance(e, T.ExpOp):
                continue
            for su in e.result.uses:
                if _is_row(su.op, "sum", axis):
                    found = _pattern(m, sub, e, su.op, x, casts)
                    claim = accept(*found) if found is not None else None
                    if claim is not None:
                        return claim
    return None


def _pattern(m, sub, e, s, x, casts):
    """(ops, x, out, func) of the softmax / log_softmax through these ops, or None."""
    out = _out_of(s)
    tail = _tail(out, m, s, x) if out is not None else None
    if tail is None:
        return None
    ops = {m, sub, e, s, *casts} | tail[1]
    for op in ops:  # nothing else reads the intermediates
        if op.result is not out and any(u.op not in ops for u in op.result.uses):
            return None
    return ops, x, out, tail[0]


def _match(m: Op, partitions: int, budget: int) -> RowSplit | None:
    """The RowSplit whose row max is ``m``, or None."""

    def accept(ops, x, out, func) -> RowSplit | None:
        shape = x.type.shape
        rows = 1
        for d in shape[:-1]:
            rows *= d
        n = shape[-1]
        c = _parts(n, partitions, x.type.dtype.itemsize)
        if rows > MAX_ROWS or c == 0 or n // c < MIN_COLUMNS_PER_PARTITION:
            return None
        if rows * (n // c) * x.type.dtype.itemsize > budget // 2:  # the input stays resident
            return None
        return RowSplit(ops, x, out, func, rows, c, n // c)

    return match_softmax(m, accept)


def find_row_splits(graph, partitions: int, budget: int) -> list[RowSplit]:
    """Every softmax / log_softmax over few long rows of ``graph``'s top block, claimed for the
    row split (``budget``: SBUF bytes per partition the resident input may use twice over)."""
    out = []
    taken: set = set()
    for op in graph.body:
        if isinstance(op, T.ReduceOp) and op not in taken:
            rs = _match(op, partitions, budget)
            if rs is not None and not (rs.ops & taken):
                out.append(rs)
                taken |= rs.ops
    return out


def _rows_view(home: HbmHome, rows: int, c: int, w: int) -> HbmHome | None:
    """``home`` seen as rows x C x W, each partition's W columns contiguous; None when that
    needs a copy or the columns are not contiguous."""
    h = home.reshape((rows, c, w))
    if h is None or h.strides[2] != 1:
        return None
    return h


def _blocks(rs: RowSplit, itemsize: int) -> list[tuple[int, int]]:
    """(start, width) column blocks of one row's W columns per partition."""
    w = rs.width
    nb = max(-(-w * itemsize // BLOCK_BYTES), -(-MIN_BLOCKS // rs.rows))
    nb = max(1, min(nb, w // MIN_COLUMNS_PER_PARTITION, w * itemsize // MIN_BLOCK_BYTES))
    size = -(-w // nb)
    return [(j, min(size, w - j)) for j in range(0, w, size)]


def emit_row_split(ctx, rs: RowSplit) -> bool:
    """Emit ``rs``; False (nothing emitted) when the input or output home cannot be viewed as
    rows of contiguous per-partition chunks."""
    c, w, rows = rs.parts, rs.width, rs.rows
    hx = _rows_view(ctx.home(rs.x), rows, c, w) if rs.x in ctx.homes else None
    if hx is None:
        return False
    hy = _rows_view(ctx.home_for_store(rs.out), rows, c, w)
    if hy is None:
        return False
    b = ctx.b
    xdt = rs.x.type.dtype
    blocks = _blocks(rs, xdt.itemsize)
    ctx.at(f"row split over {rows}x{c}x{w}: max and sum per partition")
    m = b.alloc((c, rows), "f32", "sbuf", name="rmax")
    s = b.alloc((c, rows), "f32", "sbuf", name="rsum")
    rep = b.alloc((rows, c), "f32", "sbuf", name="shift_rows")
    b.memset(dst=_all2(rep, rows, c), value=0.0)  # off the critical path: before the loads
    tiles = []
    for r in range(rows):
        xt = b.alloc((c, w), xdt, "sbuf", name="xrow")
        tiles.append(xt)
        m_r, s_r = Access(m, (_ds(0, c), _ds(r, 1))), Access(s, (_ds(0, c), _ds(r, 1)))
        for k, (j, n) in enumerate(blocks):
            src = ctx.view(HbmHome(hx.base, hx.offset + r * hx.strides[0] + j, (c, n), (hx.strides[1], 1)))
            chunk = Access(xt, (_ds(0, c), _ds(j, n)))
            b.dma_copy(dst=chunk, src=Access(src, (_ds(0, c), _ds(0, n))))
            _online_block(b, chunk, m_r, s_r, first=k == 0)
    ctx.at(f"row split over {rows}x{c}x{w}: combine across partitions")
    shift = _combine(b, _all2(m, c, rows), _all2(s, c, rows), _all2(rep, rows, c), c)
    ctx.at(f"row split over {rows}x{c}x{w}: normalise")
    for r in range(rows):
        for j, n in blocks:
            o = b.alloc((c, n), rs.out.type.dtype, "sbuf", name="yblk")
            b.activation(
                dst=Access(o, (_ds(0, c), _ds(0, n))),
                op=rs.func,
                data=Access(tiles[r], (_ds(0, c), _ds(j, n))),
                bias=Access(shift.tensor, (_ds(0, c), _ds(r, 1))),
            )
            dst = ctx.view(HbmHome(hy.base, hy.offset + r * hy.strides[0] + j, (c, n), (hy.strides[1], 1)))
            b.dma_copy(dst=Access(dst, (_ds(0, c), _ds(0, n))), src=Access(o, (_ds(0, c), _ds(0, n))))
    return True


def _col(t, c: int) -> Access:
    return Access(t, (_ds(0, c), _ds(0, 1)))


def _online_block(b, chunk: Access, m_r: Access, s_r: Access, first: bool) -> None:
    """Fold one block into the per-partition running max ``m_r`` and sum ``s_r`` (online.py).
    The running max is kept at least ``LOWEST``: a partition whose columns are all ``-inf``
    (masked logits) then sums ``exp(-inf + LOWEST) = 0`` instead of ``exp(-inf + inf) = NaN``."""
    c, n = chunk.partitions, chunk.free_size
    junk = b.alloc((c, n), "f32", "sbuf", name="expblk")
    neg = b.alloc((c, 1), "f32", "sbuf", name="negmax")
    if first:
        b.tensor_reduce(dst=m_r, op="maximum", data=chunk, axis=(1,), keepdims=True)
        b.tensor_scalar(dst=m_r, data=m_r, op0="maximum", operand0=LOWEST)
        b.tensor_scalar(dst=_col(neg, c), data=m_r, op0="multiply", operand0=-1.0)
        b.activation(dst=_all2(junk, c, n), op="exp", data=chunk, bias=_col(neg, c), reduce_res=s_r)
        return
    part = b.alloc((c, 1), "f32", "sbuf", name="blkmax")
    b.tensor_reduce(dst=_col(part, c), op="maximum", data=chunk, axis=(1,), keepdims=True)
    new = b.alloc((c, 1), "f32", "sbuf", name="newmax")
    b.tensor_tensor(dst=_col(new, c), data1=m_r, data2=_col(part, c), op="maximum")
    corr = b.alloc((c, 1), "f32", "sbuf", name="corr")
    b.tensor_tensor(dst=_col(corr, c), data1=m_r, data2=_col(new, c), op="subtract")
    b.activation(dst=_col(corr, c), op="exp", data=_col(corr, c))
    b.tensor_copy(dst=m_r, src=_col(new, c))
    b.tensor_scalar(dst=_col(neg, c), data=m_r, op0="multiply", operand0=-1.0)
    blk = b.alloc((c, 1), "f32", "sbuf", name="blksum")
    b.activation(dst=_all2(junk, c, n), op="exp", data=chunk, bias=_col(neg, c), reduce_res=_col(blk, c))
    b.tensor_tensor(dst=s_r, data1=s_r, data2=_col(corr, c), op="multiply")
    b.tensor_tensor(dst=s_r, data1=s_r, data2=_col(blk, c), op="add")


def _all2(t, c: int, n: int) -> Access:
    return Access(t, (_ds(0, c), _ds(0, n)))


def _combine(b, m: Access, s: Access, rep: Access, c: int) -> Access:
    """``[C, R]`` tile of the per-row shift ``-(M + log S)`` with ``M = max_c m`` and
    ``S = sum_c s · exp(m - M)``, computed with the rows on partitions (two TensorE transposes
    in, one out); ``rep`` is an ``[R, C]`` tile of zeros."""
    rows = m.free_size
    m_t, s_t = (
        b.alloc((rows, c), "f32", "psum", name="rmax_t"),
        b.alloc((rows, c), "f32", "psum", name="rsum_t"),
    )
    b.nc_transpose(dst=_all2(m_t, rows, c), data=m)
    b.nc_transpose(dst=_all2(s_t, rows, c), data=s)
    neg = b.alloc((rows, 1), "f32", "sbuf", name="negmax")
    b.tensor_reduce(
        dst=_col(neg, rows), op="maximum", data=_all2(m_t, rows, c), axis=(1,), negate=True, keepdims=True
    )
    t = b.alloc((rows, c), "f32", "sbuf", name="rescaled")
    b.activation(dst=_all2(t, rows, c), op="exp", data=_all2(m_t, rows, c), bias=_col(neg, rows))
    b.tensor_tensor(dst=_all2(t, rows, c), data1=_all2(t, rows, c), data2=_all2(s_t, rows, c), op="multiply")
    total = b.alloc((rows, 1), "f32", "sbuf", name="rowsum")
    b.tensor_reduce(dst=_col(total, rows), op="add", data=_all2(t, rows, c), axis=(1,), keepdims=True)
    b.activation(dst=_col(total, rows), op="log", data=_col(total, rows))
    # rep[r, :] = (0 + (-M)) - log S, then transposed: every partition holds each row's shift
    b.tensor_scalar(
        dst=rep, data=rep, op0="add", operand0=_col(neg, rows), op1="subtract", operand1=_col(total, rows)
    )
    return transpose_to_sbuf(b, rep, name="shift")
