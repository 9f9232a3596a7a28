"""tensor.cumsum of floats along a contiguous axis, on chip.

The composite's expansion (tensor/composites_index.py) adds in log2(n) doubling steps, each a
concat of ``y[:s]`` and ``y[s:] + y[:n-s]``; lowered op by op every step is stored to HBM
scratch and read back (cumsum(-1) of 8x2048 f32: 16x the minimum traffic, 459x the roofline).
Here each block of up to 128 rows is loaded once, the same doubling steps run between two SBUF
tiles (step ``s``: a copy of the first ``s`` columns on ScalarE, the add of the rest on
VectorE), and the result is stored once. The adds are the expansion's, in the same order and in
fp32 (a 16-bit float input is widened first and the sums rounded back), so the values are
bit-identical to the tensor interpreter's.

decompose keeps a cumsum this path takes (capabilities.py asks ``cumsum_refusal``) and expands
the others: integer cumsums (their exact wrapping adds are wide-integer arithmetic), axes that
are not contiguous in memory, and rows too long for two fp32 tiles in SBUF.
"""

from __future__ import annotations

import math

from ...ir.dtypes import float32
from ...ir.errors import BuildError
from ...nki.types import Access, Affine, DimSlice
from ...tensor.composites_index import CumsumOp
from .context import LowerContext
from .rules import item_rule

MAX_ROW_BYTES = 65536  # per partition, of one fp32 tile (two are live)


def cumsum_refusal(op) -> str | None:
    """Why the on-chip path cannot take ``op`` (a tensor.cumsum), or None."""
    x = op.operand(0).type
    if x.rank == 0:
        return "a 0-d operand has no axis"
    if not x.dtype.is_float or x.dtype.itemsize > 4:
        return f"{x.dtype} sums are not fp32 adds"
    if op.attrs["axis"] % x.rank != x.rank - 1:
        return "the axis is not the last"
    if x.shape[-1] * 4 > MAX_ROW_BYTES:
        return f"rows of {x.shape[-1]:,} elements exceed {MAX_ROW_BYTES:,} bytes of fp32 per partition"
    return None


def _cols(t, p: int, start: int, size: int) -> Access:
    return Access(t, (DimSlice(0, p, 1), DimSlice(start, size, 1)))


@item_rule(CumsumOp)
def lower_cumsum(ctx: LowerContext, op: CumsumOp) -> None:
    reason = cumsum_refusal(op)
    if reason is not None:  # decompose expands the ops this path does not take
        raise BuildError(f"lowering: {op.name} has no native lowering here ({reason}); decompose expands it")
    x, y = op.operand(0), op.result
    n = x.type.shape[-1]
    rows = math.prod(x.type.shape) // n
    src = ctx.home(x).reshape((rows, n))
    dst = ctx.home_for_store(y).reshape((rows, n))
    if src is None or dst is None or src.strides[1] != 1 or dst.strides[1] != 1:
        raise BuildError(f"lowering: {op.name}: the rows of its operand and result must be contiguous")
    sv, dv = ctx.view(src), ctx.view(dst)
    b, p = ctx.b, ctx.partitions
    xdt, ydt = x.type.dtype, y.type.dtype

    def block(r0, pr: int) -> None:
        rows_at = (DimSlice(r0, pr, 1), DimSlice(0, n, 1))
        cur = b.alloc((pr, n), float32, "sbuf", name="csum")
        if xdt is float32:
            b.dma_copy(dst=cur, src=Access(sv, rows_at))
        else:
            raw = b.alloc((pr, n), xdt, "sbuf", name="csum_in")
            b.dma_copy(dst=raw, src=Access(sv, rows_at))
            b.tensor_copy(dst=cur, src=raw, engine="scalar")
        s = 1
        while s < n:
            nxt = b.alloc((pr, n), float32, "sbuf", name="csum")
            b.tensor_copy(dst=_cols(nxt, pr, 0, s), src=_cols(cur, pr, 0, s), engine="scalar")
            b.tensor_tensor(
                _cols(nxt, pr, s, n - s), _cols(cur, pr, s, n - s), _cols(cur, pr, 0, n - s), "add"
            )
            cur, s = nxt, s * 2
        if ydt is not float32:
            out = b.alloc((pr, n), ydt, "sbuf", name="csum_out")
            b.tensor_copy(dst=out, src=cur, engine="scalar")
            cur = out
        b.dma_copy(dst=Access(dv, rows_at), src=cur)

    full, rem = divmod(rows, p)
    if full == 1:
        block(0, p)
    elif full > 1:
        with b.fori_loop(0, full) as i:
            block(Affine.of(i) * p, p)
    if rem:
        block(full * p, rem)
