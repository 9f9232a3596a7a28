"""Staging the stationary operand Aᵀ of a matmul from A in its natural (M, K) layout.

When A's K dim is the contiguous one, the M tile's rows are loaded in wide K slices — each DMA
moves ``dma_saturating_bytes_per_partition`` (4 KiB) per partition where K allows, instead of
one 128 x 128 block per DMA (256 B per partition in bf16, deep in the overhead-bound band of
the DMA model) — and every 128-column block is transposed on TensorE into a slot of a PSUM bank.
One bank holds ``psum_bank_bytes / (128 x itemsize)`` transposed blocks (8 in bf16, 4 in fp32),
evacuated to Aᵀ in SBUF by one copy. The PSUM tile is one bank, so the PSUM plan
(psum_plan.py) counts it like any other transpose tile.
"""

from __future__ import annotations

from ...nki.types import Access, Affine, DimSlice


def _ds(off, size: int) -> DimSlice:
    return DimSlice(Affine.of(off), size, 1)


def slice_columns(target, k: int, itemsize: int) -> int:
    """K columns one natural load of A moves: the DMA's saturating bytes per partition, a
    multiple of the 128-column transpose block, at most K rounded up to a block."""
    p = target.pe_transpose_max
    cols = max(p, (target.dma_saturating_bytes_per_partition // itemsize) // p * p)
    return min(cols, -(-k // p) * p)


def natural_slice_bytes(target, k: int, itemsize: int) -> int:
    """SBUF bytes per partition of one natural slice tile (for the SBUF budget)."""
    return slice_columns(target, k, itemsize) * itemsize


def stage_a_natural(em, at, idx, m0, mt: int) -> None:
    """Fill ``at`` [p, nk, mt] (Aᵀ, K chunk c at ``at[:, c, :]``) for the M tile at ``m0``
    of ``mt`` rows of the emitter ``em`` (a MatmulEmitter), from natural slices of A."""
    b, tg, p = em.b, em.ctx.target, em.p
    dt = em.a_dt
    cols = slice_columns(tg, em.k, dt.itemsize)
    per_bank = max(1, tg.psum_bank_bytes // (p * dt.itemsize))

    def one_slice(k0, kc: int, _first) -> None:
        nat = b.alloc((p, cols), dt, "sbuf", name="a_nat")
        b.dma_copy(dst=Access(nat, (_ds(0, mt), _ds(0, kc))), src=em._window("a_nat", idx, m0, mt, k0, kc))
        base = Affine.of(k0)
        chunk0 = Affine(base.const // p, tuple((v, c // p) for v, c in base.terms))
        full, rem = kc // p, kc % p
        for g0 in range(0, full, per_bank):
            ng = min(per_bank, full - g0)
            _transpose_group(em, at, nat, chunk0 + g0, g0, ng, p, mt, per_bank)
        if rem:
            _transpose_group(em, at, nat, chunk0 + full, full, 1, rem, mt, per_bank)

    em._instances(em.k, cols, one_slice)


def _transpose_group(em, at, nat, chunk, g0: int, ng: int, kt: int, mt: int, per_bank: int) -> None:
    """Transpose ``ng`` blocks of ``kt`` columns of ``nat`` (starting at block ``g0``) into one
    PSUM bank and copy them to ``at[:, chunk:chunk+ng, :]``."""
    b, p = em.b, em.p
    ps = b.alloc((p, per_bank, p), nat.type.dtype, "psum", name="ps_t")
    for s in range(ng):
        b.nc_transpose(
            dst=Access(ps, (_ds(0, kt), _ds(s, 1), _ds(0, mt))),
            data=Access(nat, (_ds(0, mt), _ds((g0 + s) * p, kt))),
        )
    b.tensor_copy(
        dst=Access(at, (_ds(0, kt), DimSlice(chunk, ng, 1), _ds(0, mt))),
        src=Access(ps, (_ds(0, kt), _ds(0, ng), _ds(0, mt))),
    )
