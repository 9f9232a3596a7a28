"""Permuting copies with several destination rows per partition (``x.T.copy()`` of a wide
matrix): long contiguous runs on both sides without contiguous slabs to batch.

``permute_copy.py`` loads ``[128, ≤ 512]`` blocks (one source row of the destination's last dim
``L`` per partition) and stores each 128-column piece with one DMA of ``128``-element runs:
for ``x.T.copy()`` of 2048x4096 bf16 that is 128 loads of 1 KiB runs and 512 stores of 256 B
runs, 640 DMAs whose fixed issue cost (600 ns on one of two queues) dominates. Here a block is
``128 m`` values of ``L`` by ``ca`` values of the source's contiguous dim ``a``: partition
``p`` loads ``L`` indices ``l0 + p m … l0 + p m + m − 1`` (``m`` runs of ``ca``). For every
row offset ``r < m`` the transposes of ``tile[:, r, cols]`` (one per 128 columns, a PSUM bank
of them at a time) give ``[cols, p]``, which one copy scatters into ``[cols, block, p, m]`` at
offset ``r``: in destination order, ``L`` index ``l0 + p m + r``. One DMA stores the block,
each partition writing runs of ``128 m`` elements. ``m`` and ``ca`` are the largest that make
runs of ``RUN_BYTES`` on each side within ``MAX_TILE_BYTES`` per partition.
"""

from __future__ import annotations

from contextlib import ExitStack

from ...nki.types import Access, Affine
from ...nki.types import ds as _ds
from .homes import HbmHome

RUN_BYTES = 4096  # contiguous bytes per descriptor aimed for (the DMA model saturates at 4 KiB)
MIN_RUN_BYTES = 2048  # below this the plain tiles of permute_copy.py are kept
MAX_TILE_BYTES = 32768  # bytes per partition of one loaded block


def _plan(rows: int, cols: int, itemsize: int, p: int) -> tuple[int, int] | None:
    """(m, ca): destination rows per partition and source columns per block — the longest
    shorter run (counted up to ``RUN_BYTES``) within ``MAX_TILE_BYTES`` per partition, the
    smaller tile on ties; None when no block gives runs of ``MIN_RUN_BYTES`` on both sides."""
    best = None
    m = 1
    while p * m <= rows:
        ca = p
        while ca <= cols:
            if rows % (p * m) == 0 and cols % ca == 0 and m * ca * itemsize <= MAX_TILE_BYTES:
                run = min(p * m * itemsize, ca * itemsize, RUN_BYTES)
                key = (run, -m * ca)
                if run >= MIN_RUN_BYTES and (best is None or key > best[0]):
                    best = (key, m, ca)
            ca *= 2
        m *= 2
    return None if best is None else best[1:]


def copy_permuted_rows(ctx, src: HbmHome, dst: HbmHome, a: int) -> bool:
    """Emit the copy of ``src`` into ``dst`` (same shape; ``a`` the source's unit-stride dim,
    the destination's last dim unit-stride) as described in the module docstring; False
    (nothing emitted) when the dims are not multiples of 128 or no block pays."""
    shape, rank, p = src.shape, len(src.shape), ctx.partitions
    last = rank - 1
    rows, cols = shape[last], shape[a]
    if rows % p or cols % p:
        return False
    dt = src.base.type.dtype
    plan = _plan(rows, cols, dt.itemsize, p)
    if plan is None:
        return False
    m, ca = plan
    nb = ca // p
    others = [d for d in range(rank) if d not in (a, last)]
    lead_shape = tuple(shape[d] for d in others)
    # source (others, L blocks, a blocks, p, m, ca); destination (others, L blocks, a blocks,
    # cols, nb, p * m)
    s_view = ctx.view(
        HbmHome(
            src.base,
            src.offset,
            lead_shape + (rows // (p * m), cols // ca, p, m, ca),
            tuple(src.strides[d] for d in others)
            + (p * m * src.strides[last], ca, m * src.strides[last], src.strides[last], 1),
        )
    )
    d_view = ctx.view(
        HbmHome(
            dst.base,
            dst.offset,
            lead_shape + (rows // (p * m), cols // ca, p, nb, p * m),
            tuple(dst.strides[d] for d in others)
            + (p * m, ca * dst.strides[a], dst.strides[a], p * dst.strides[a], 1),
        )
    )
    b = ctx.b
    per_bank = max(1, ctx.target.psum_bank_fmax // p)  # 128-column transposes one PSUM tile holds
    with ExitStack() as loops:
        idx = [_loop(b, loops, n) for n in lead_shape + (rows // (p * m), cols // ca)]
        lead = tuple(_ds(i, 1) for i in idx)
        t = b.alloc((p, m, ca), dt, "sbuf", name="perm_in")
        b.dma_copy(
            dst=Access(t, (_ds(0, p), _ds(0, m), _ds(0, ca))),
            src=Access(s_view, lead + (_ds(0, p), _ds(0, m), _ds(0, ca))),
        )
        out = b.alloc((p, nb, p, m), dt, "sbuf", name="perm_out")
        for r in range(m):
            for c0 in range(0, nb, per_bank):
                g = min(per_bank, nb - c0)
                ps = b.alloc((p, g, p), dt, "psum", name="perm_t")
                for j in range(g):
                    b.nc_transpose(
                        dst=Access(ps, (_ds(0, p), _ds(j, 1), _ds(0, p))),
                        data=Access(t, (_ds(0, p), _ds(r, 1), _ds((c0 + j) * p, p))),
                    )
                b.tensor_copy(
                    dst=Access(out, (_ds(0, p), _ds(c0, g), _ds(0, p), _ds(r, 1))),
                    src=Access(ps, (_ds(0, p), _ds(0, g), _ds(0, p))),
                )
        b.dma_copy(
            dst=Access(d_view, lead + (_ds(0, p), _ds(0, nb), _ds(0, p * m))),
            src=Access(out, (_ds(0, p), _ds(0, nb), _ds(0, p), _ds(0, m))),
        )
    return True


def _loop(b, loops: ExitStack, count: int):
    """A ``fori_loop`` index over ``count`` (0 when ``count`` is 1)."""
    if count == 1:
        return 0
    return Affine.of(loops.enter_context(b.fori_loop(0, count)))
