"""Loads of a small-step slice on the last axis (``x[:, ::2]``, ``x[..., 1::2]`` of an
interleaved RoPE) as contiguous loads plus an on-chip strided copy; HBM -> HBM copies of one
(``y = x[:, ::2]`` as an output) through SBUF the same way.

An HBM window whose innermost dim steps over ``s > 1`` elements moves one element per DMA
descriptor. When ``s`` elements take at most ``MAX_STEP_BYTES``, reading the contiguous span
(``(n - 1) * s + 1`` elements per row) is cheaper: one DMA loads the span into a wide SBUF
tile and one engine copy reads every ``s``-th element of it into the destination tile. The
span is cut into chunks of at most ``CHUNK_BYTES`` per partition, so the wide tile stays small.
"""

from __future__ import annotations

from ...ir.types import row_major_strides
from ...nki.ops import HbmViewOp
from ...nki.types import Access, Affine, DimSlice, MemorySpace
from .homes import HbmHome
from .peeled_loop import peeled_blocks

MAX_STEP_BYTES = 64  # element-wise descriptors cost more than reading this many bytes per element
CHUNK_BYTES = 16384  # per partition, of one wide tile


def _view_layout(t) -> tuple[object, int, tuple[int, ...]] | None:
    """(base, offset, strides) of an HBM tensor: a kernel tensor or an ``hbm_view`` of one."""
    op = t.defining_op
    if isinstance(op, HbmViewOp):
        base = op.operand(0)
        if isinstance(base.defining_op, HbmViewOp):
            return None
        return base, op.attrs["offset"], tuple(op.attrs["strides"])
    if op is None or t.type.space is MemorySpace.HBM:
        return t, 0, row_major_strides(t.type.shape)
    return None


def span_view(ctx, view):
    """The HBM view covering ``view``'s elements with its last dim made contiguous (the span a
    destrided load reads), or None when ``view``'s last dim steps too far to pay; built ahead of
    the loops that load from it."""
    layout = _view_layout(view)
    if layout is None or not view.type.shape:
        return None
    base, offset, strides = layout
    if strides[-1] < 2 or strides[-1] * view.type.dtype.itemsize > MAX_STEP_BYTES:
        return None
    shape = view.type.shape
    wide_shape = shape[:-1] + ((shape[-1] - 1) * strides[-1] + 1,)
    return ctx.view(HbmHome(base, offset, wide_shape, strides[:-1] + (1,)))


def load_destrided(b, dst: Access, src: Access, wide_view) -> bool:
    """Emit ``dst <- src`` (an SBUF tile window <- an HBM window of a view whose ``span_view``
    is ``wide_view``) as contiguous span loads and strided engine copies when the source's last
    dim steps over a few elements; False (nothing emitted) otherwise."""
    if wide_view is None or dst.space is MemorySpace.HBM or dst.dtype != src.dtype:
        return False
    strides = _view_layout(src.tensor)[2]
    last, out_last = src.dims[-1], dst.dims[-1]
    n, item = last.size, src.dtype.itemsize
    step = strides[-1] * last.stride
    if n < 2 or out_last.size != n or step < 2 or step * item > MAX_STEP_BYTES:
        return False
    inner = 1
    for d in dst.dims[1:-1]:
        inner *= d.size
    m = min(n, CHUNK_BYTES // (inner * step * item))
    if m < 2:
        return False
    for c in range(0, n, m):
        w = min(m, n - c)
        span = (w - 1) * step + 1
        lead = dst.dims[:-1]
        wide = b.alloc(tuple(d.size for d in lead) + (span,), dst.dtype, "sbuf", name="span")
        full = tuple(DimSlice(0, d.size, 1) for d in lead)
        first = (last.offset + c * last.stride) * strides[-1]
        whole = Access(wide, full + (DimSlice(0, span, 1),))
        b.dma_copy(dst=whole, src=Access(wide_view, src.dims[:-1] + (DimSlice(first, span, 1),)))
        out = DimSlice(out_last.offset + c * out_last.stride, w, out_last.stride)
        b.tensor_copy(dst=Access(dst.tensor, lead + (out,)), src=Access(wide, full + (DimSlice(0, w, step),)))
    return True


def copy_destrided(ctx, src: HbmHome, dst: HbmHome) -> bool:
    """HBM -> HBM copy of a small-step last-axis slice (``y = x[:, ::2]``) through SBUF: per
    block of up to 128 rows of the second-to-last dim (and instance of the dims before it), the
    span loads and strided copies of ``load_destrided``, then one contiguous store. False
    (nothing emitted) when it does not apply."""
    shape, dt = src.shape, src.base.type.dtype
    rank = len(shape)
    if rank < 2 or tuple(dst.shape) != tuple(shape) or dst.base.type.dtype is not dt or dst.strides[-1] != 1:
        return False
    n, step = shape[-1], src.strides[-1]
    if n < 2 or step < 2 or step * dt.itemsize > MAX_STEP_BYTES or n * dt.itemsize > CHUNK_BYTES:
        return False
    sv, dv = ctx.view(src), ctx.view(dst)
    wide_view = span_view(ctx, sv)
    if wide_view is None:
        return False
    b, p = ctx.b, ctx.partitions
    rows = shape[-2]

    def body(lead, r0, pr):
        t = b.alloc((pr, n), dt, "sbuf", name="strided")
        tile = Access(t, (DimSlice(0, pr, 1), DimSlice(0, n, 1)))
        window = lead + (DimSlice(r0, pr, 1), DimSlice(0, n, 1))
        load_destrided(b, Access(t, tile.dims), Access(sv, window), wide_view)
        b.dma_copy(dst=Access(dv, window), src=tile)

    def nest(d, lead):
        if d == rank - 2:
            peeled_blocks(b, rows, p, lambda r0, n: body(lead, r0, n))
            return
        with b.fori_loop(0, shape[d]) as i:
            nest(d + 1, lead + (DimSlice(Affine.of(i), 1, 1),))

    nest(0, ())
    return True
