"""Batched permuting copies: several source slabs per DMA, long contiguous runs both ways.

``permute_copy.py`` loads one ``[L, C]`` slab (the destination's last dim ``L`` on the
partitions, the source's contiguous dim ``C`` free) per DMA: for ``x.transpose(2, 0, 1).copy()``
of 64x128x256 f32 that is 64 loads of 1 KiB runs and 128 stores of 512 B runs. When the slabs
are themselves contiguous (the other dim ``o`` next to them has stride ``L * C``), ``k`` of them
are one contiguous block, loaded with one DMA as a ``[128, m * C]`` tile: partition ``p`` holds
slab ``p // (128 / k)``, rows ``(p % (128 / k)) * m ... + m`` of it (``m = k * L / 128`` rows,
each partition reading ``m * C`` contiguous elements). For every row offset ``r < m`` and block
of up to 128 columns, one TensorE transpose of ``tile[:, r * C + cols]`` gives ``[cols, (slab,
row block)]``; a copy scatters it into an SBUF tile ``[cols, k, 128 / k, m]`` at row offset
``r`` — which is ``[cols, k, L]`` in destination order — and one DMA per column block stores it,
each partition writing ``k`` runs of ``L`` (one run of ``k * L`` when the destination's ``o``
stride is ``L``).

For 64x128x256 f32: 8 loads of 8 KiB per partition and 16 stores of 4 KiB per partition instead
of 64 + 128 DMAs; the transposes (128) are the same.
"""

from __future__ import annotations

from contextlib import ExitStack

from ...nki.types import Access, Affine
from ...nki.types import ds as _ds
from .homes import HbmHome

MAX_LOAD_BYTES = 8192  # bytes per partition of one load (>= 4 KiB saturates a DMA)


def _slabs_per_load(o: int, rows: int, cols: int, itemsize: int, p: int) -> int:
    """The largest ``k >= 2`` slabs per load (a power of two dividing ``p`` and ``o``, with
    ``p / k`` partitions per slab dividing ``rows``, at most ``MAX_LOAD_BYTES`` per partition);
    0 if none."""
    k = p
    while k >= 2:
        per_slab = p // k
        if o % k == 0 and rows % per_slab == 0 and (rows // per_slab) * cols * itemsize <= MAX_LOAD_BYTES:
            return k
        k //= 2
    return 0


def copy_permuted_batched(ctx, src: HbmHome, dst: HbmHome, a: int) -> bool:
    """Emit the batched permuting copy of ``src`` into ``dst`` (same shape; ``a`` the source's
    unit-stride dim, the destination's last dim unit-stride); False (nothing emitted) when the
    slabs are not contiguous or no batch size fits."""
    shape, rank, p = src.shape, len(src.shape), ctx.partitions
    last = rank - 1
    rows, cols = shape[last], shape[a]
    if src.strides[last] != cols:
        return False
    slab = rows * cols
    os_ = [d for d in range(rank) if d not in (a, last) and shape[d] > 1 and src.strides[d] == slab]
    if not os_:
        return False
    o = os_[-1]
    w = min(p, cols)
    if cols % w:
        return False
    dt = src.base.type.dtype
    k = _slabs_per_load(shape[o], rows, cols, dt.itemsize, p)
    if not k:
        return False
    per_slab = p // k
    m = rows // per_slab
    outer = [d for d in range(rank) if d not in (a, last, o)]
    lead_shape = tuple(shape[d] for d in outer) + (shape[o] // k,)
    s_view = ctx.view(
        HbmHome(
            src.base,
            src.offset,
            lead_shape + (p, m * cols),
            tuple(src.strides[d] for d in outer) + (k * slab, m * cols, 1),
        )
    )
    nb = cols // w
    d_view = ctx.view(
        HbmHome(
            dst.base,
            dst.offset,
            lead_shape + (w, nb, k, rows),
            tuple(dst.strides[d] for d in outer)
            + (k * dst.strides[o], dst.strides[a], w * dst.strides[a], dst.strides[o], 1),
        )
    )
    b = ctx.b
    with ExitStack() as loops:
        idx = [_loop(b, loops, n) for n in lead_shape]
        lead = tuple(_ds(i, 1) for i in idx)
        t = b.alloc((p, m * cols), dt, "sbuf", name="perm_in")
        b.dma_copy(
            dst=Access(t, (_ds(0, p), _ds(0, m * cols))),
            src=Access(s_view, lead + (_ds(0, p), _ds(0, m * cols))),
        )
        out = b.alloc((w, nb, k, per_slab, m), dt, "sbuf", name="perm_out")
        per_bank = max(1, ctx.target.psum_bank_fmax // p)  # column blocks one PSUM bank holds
        for r in range(m):
            for c0 in range(0, nb, per_bank):
                g = min(per_bank, nb - c0)
                # the p transposed columns as (k, per_slab): the copy pairs dims with perm_out
                ps = b.alloc((w, g, k, per_slab), dt, "psum", name="perm_t")
                for j in range(g):
                    b.nc_transpose(
                        dst=Access(ps, (_ds(0, w), _ds(j, 1), _ds(0, k), _ds(0, per_slab))),
                        data=Access(t, (_ds(0, p), _ds(r * cols + (c0 + j) * w, w))),
                    )
                b.tensor_copy(
                    dst=Access(out, (_ds(0, w), _ds(c0, g), _ds(0, k), _ds(0, per_slab), _ds(r, 1))),
                    src=Access(ps, (_ds(0, w), _ds(0, g), _ds(0, k), _ds(0, per_slab))),
                )
        b.dma_copy(
            dst=Access(d_view, lead + (_ds(0, w), _ds(0, nb), _ds(0, k), _ds(0, rows))),
            src=Access(out, (_ds(0, w), _ds(0, nb), _ds(0, k), _ds(0, per_slab), _ds(0, m))),
        )
    return True


def _loop(b, loops: ExitStack, count: int):
    """A ``fori_loop`` index over ``count`` (0 when ``count`` is 1)."""
    if count == 1:
        return 0
    return Affine.of(loops.enter_context(b.fori_loop(0, count)))
