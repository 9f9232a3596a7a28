"""Hardware legality of ``nki.stream_shuffle`` (ops/shuffle.py), NKI 0.6 page
``nki.isa.nc_stream_shuffle``:

- Vector engine, SBUF / PSUM operands (the common compute rules);
- dst and src of one dtype, with the same partitions (count and start: stricter, the page allows
  another start under rules it does not spell out) and elements per partition;
- whole quadrants: 32, 64, 96 or 128 partitions starting at a multiple of 32;
- ``mask``: 32 indices, each 0..31 (the page's 255, "leave unmodified", refused: stricter).
"""

from __future__ import annotations

from . import ops
from .verify_ops import _same_pf, check_compute_common, rule


@rule(ops.StreamShuffleOp)
def _stream_shuffle(ctx, op) -> None:
    check_compute_common(ctx, op)
    _same_pf(ctx, op, "dst", "src")
    dst, src = op.access("dst"), op.access("src")
    if dst.dtype is not src.dtype:
        raise ctx.fail(op, f"dst is {dst.dtype} but src is {src.dtype}; stream_shuffle moves raw elements")
    q = ctx.target.partition_quadrant
    off = dst.dims[0].offset
    if dst.partitions % q or not (off.is_const and off.const % q == 0):
        raise ctx.fail(
            op,
            f"dst covers {dst.partitions} partitions; stream_shuffle moves whole quadrants of {q} partitions",
        )
    mask = op.attrs["mask"]
    if len(mask) != q or any(not 0 <= m < q for m in mask):
        raise ctx.fail(op, f"mask must hold {q} partition indices 0..{q - 1}, got {list(mask)}")
