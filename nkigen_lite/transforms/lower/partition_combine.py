"""Moving per-partition values across partitions on the Tensor engine.

``transpose_to_sbuf`` turns an ``[R, C]`` SBUF tile into a ``[C, R]`` SBUF tile (a TensorE
transpose into PSUM, then a copy back): the way a per-row value computed with the rows on
partitions (one value per row, replicated along the free dim) reaches every partition that
holds a piece of the row. Transposes are data movement, so infinities and NaNs stay in their own
row instead of leaking through a matmul's ``0 · inf`` products.
"""

from __future__ import annotations

from ...nki.types import Access, Affine, DimSlice


def _all(t) -> Access:
    return Access(t, tuple(DimSlice(Affine.of(0), n, 1) for n in t.type.shape))


def transpose_to_sbuf(b, src: Access, name: str = "t") -> Access:
    """``[C, R]`` fp32 SBUF tile holding the transpose of the ``[R, C]`` access ``src``."""
    r, c = src.partitions, src.free_size
    ps = b.alloc((c, r), "f32", "psum", name=f"{name}_t")
    b.nc_transpose(dst=_all(ps), data=src)
    out = b.alloc((c, r), "f32", "sbuf", name=name)
    b.tensor_copy(dst=_all(out), src=_all(ps))
    return _all(out)
