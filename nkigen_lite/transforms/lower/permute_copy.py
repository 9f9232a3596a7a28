"""Permuting HBM -> HBM copies through TensorE transposes (``x.transpose(2, 0, 1).copy()``, a
transposed value stored as an output).

Copying a view whose contiguous source dim ``a`` is not the destination's last dim ``L`` as one
DMA moves one element per descriptor. Instead, per instance of the other dims (``fori_loop``s)
and per block of ``L`` (≤ 128 rows) and of ``a`` (≤ 512 columns): one DMA loads a tile with
``L`` on the partitions and ``a`` free (each partition reads a contiguous run of ``a``), TensorE
transposes each 128-column piece into PSUM (``a`` on the partitions), a copy brings it to SBUF,
and one DMA stores it with each partition writing a contiguous run of ``L``. Float data of 2 or
4 bytes only (a transpose passes through the PE array); other copies keep the plain DMA. When
the source slabs are contiguous, several go into one DMA (permute_batch.py); otherwise, when
the dims are multiples of 128, several destination rows per partition (permute_rows.py).
"""

from __future__ import annotations

from contextlib import ExitStack

from ...nki.types import Access, Affine
from ...nki.types import ds as _ds
from .homes import HbmHome
from .permute_batch import copy_permuted_batched
from .permute_rows import copy_permuted_rows

MAX_FREE = 512  # columns of ``a`` per loaded tile


def _blocks(n: int, size: int, quantum: int) -> tuple[int, int] | None:
    """(block, count): ``n`` whole when it fits ``size``, else the largest multiple of
    ``quantum`` up to ``size`` that divides ``n``; None if none does."""
    if n <= size:
        return n, 1
    for blk in range(size - size % quantum, quantum - 1, -quantum):
        if n % blk == 0:
            return blk, n // blk
    return None


def copy_permuted(ctx, src: HbmHome, dst: HbmHome) -> bool:
    """Emit the on-chip permuting copy of ``src`` into ``dst`` (same shape); False (nothing
    emitted) when it does not apply."""
    shape = src.shape
    rank = len(shape)
    dt = src.base.type.dtype
    if rank < 2 or tuple(dst.shape) != tuple(shape):  # a reshaping copy pairs elements row-major
        return False
    if not dt.is_float or dt.itemsize not in (2, 4) or dst.base.type.dtype is not dt:
        return False
    last = rank - 1
    if dst.strides[last] != 1 or shape[last] < 2:
        return False
    unit = [d for d in range(rank) if src.strides[d] == 1 and shape[d] > 1]
    if len(unit) != 1 or unit[0] == last:
        return False
    a = unit[0]
    if copy_permuted_batched(ctx, src, dst, a) or copy_permuted_rows(ctx, src, dst, a):
        return True
    p = ctx.partitions
    lb, ab = _blocks(shape[last], p, p), _blocks(shape[a], MAX_FREE, p)
    if lb is None or ab is None:
        return False
    others = [d for d in range(rank) if d not in (a, last)]
    s_view = src.transpose(others + [last, a])
    d_view = dst.transpose(others + [a, last])
    b = ctx.b
    sv, dv = ctx.view(s_view), ctx.view(d_view)
    with ExitStack() as loops:
        idx = []
        for d in others:
            idx.append(_loop(b, loops, shape[d]))
        l0 = _loop(b, loops, lb[1], lb[0])
        a0 = _loop(b, loops, ab[1], ab[0])
        pl, fa = lb[0], ab[0]
        lead = tuple(_ds(i, 1) for i in idx)
        t = b.alloc((pl, fa), dt, "sbuf", name="perm_in")
        b.dma_copy(dst=Access(t, (_ds(0, pl), _ds(0, fa))), src=Access(sv, lead + (_ds(l0, pl), _ds(a0, fa))))
        for j in range(0, fa, p):
            w = min(p, fa - j)
            ps = b.alloc((w, pl), dt, "psum", name="perm_t")
            b.nc_transpose(dst=Access(ps, (_ds(0, w), _ds(0, pl))), data=Access(t, (_ds(0, pl), _ds(j, w))))
            o = b.alloc((w, pl), dt, "sbuf", name="perm_out")
            b.tensor_copy(dst=Access(o, (_ds(0, w), _ds(0, pl))), src=Access(ps, (_ds(0, w), _ds(0, pl))))
            out = Access(dv, lead + (_ds(a0 + j, w), _ds(l0, pl)))
            b.dma_copy(dst=out, src=Access(o, (_ds(0, w), _ds(0, pl))))
    return True


def _loop(b, loops: ExitStack, count: int, step: int = 1):
    """A ``fori_loop`` over ``count`` blocks of ``step`` (its index times ``step``), or 0."""
    if count == 1:
        return 0
    i = loops.enter_context(b.fori_loop(0, count))
    return Affine.of(i) * step
