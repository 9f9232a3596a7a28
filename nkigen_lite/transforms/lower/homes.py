"""HBM homes: where a tensor value lives in HBM, as a strided view of a kernel input or an HBM
allocation. Reshape (when no copy is needed), transpose, broadcast_to and positive-step slices
are all new views of the same storage, so those ops cost no data movement."""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.types import row_major_strides
from ...ir.value import Value


@dataclass(frozen=True, eq=False)
class HbmHome:
    """Element ``idx`` of the value is ``base.flat[offset + Σ idx[d] * strides[d]]``."""

    base: Value
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    def __eq__(self, other) -> bool:  # the base compares by identity (Values overload ==)
        return (
            isinstance(other, HbmHome)
            and self.base is other.base
            and self.offset == other.offset
            and self.shape == other.shape
            and self.strides == other.strides
        )

    def __hash__(self) -> int:
        return hash((id(self.base), self.offset, self.shape, self.strides))

    def same_elements(self, other: HbmHome) -> bool:
        """True when ``other`` addresses the same elements in the same order: equal but for the
        strides of extent-1 dims, which address nothing (``x.transpose`` moving a unit dim)."""
        return (
            self.base is other.base
            and self.offset == other.offset
            and self.shape == other.shape
            and all(a == b for a, b, n in zip(self.strides, other.strides, self.shape) if n > 1)
        )

    @staticmethod
    def whole(base: Value) -> HbmHome:
        shape = base.type.shape
        return HbmHome(base, 0, shape, row_major_strides(shape))

    @property
    def is_whole_base(self) -> bool:
        return (
            self.offset == 0
            and self.shape == self.base.type.shape
            and self.strides == row_major_strides(self.shape)
        )

    def transpose(self, perm) -> HbmHome:
        return HbmHome(
            self.base, self.offset, tuple(self.shape[p] for p in perm), tuple(self.strides[p] for p in perm)
        )

    def broadcast_to(self, shape: tuple[int, ...]) -> HbmHome:
        lead = len(shape) - len(self.shape)
        strides = [0] * lead
        for s, n, t in zip(self.strides, self.shape, shape[lead:]):
            strides.append(s if n == t else 0)
        return HbmHome(self.base, self.offset, tuple(shape), tuple(strides))

    def slice(self, starts, steps, shape) -> HbmHome | None:
        """A positive-step slice; None when a step is negative (no negative strides in HBM views)."""
        if any(st < 0 for st in steps):
            return None
        off = self.offset + sum(a * s for a, s in zip(starts, self.strides))
        return HbmHome(self.base, off, tuple(shape), tuple(s * st for s, st in zip(self.strides, steps)))

    def reshape(self, shape: tuple[int, ...]) -> HbmHome | None:
        """The same elements in row-major order under a new shape, if no copy is needed."""
        strides = nocopy_reshape_strides(self.shape, self.strides, shape)
        if strides is None:
            return None
        return HbmHome(self.base, self.offset, tuple(shape), strides)

    def sub(self, axis: int, start: int, size: int) -> HbmHome:
        """The window [start, start+size) along ``axis``."""
        shape = list(self.shape)
        shape[axis] = size
        return HbmHome(self.base, self.offset + start * self.strides[axis], tuple(shape), self.strides)


def nocopy_reshape_strides(old_shape, old_strides, new_shape) -> tuple[int, ...] | None:
    """Strides giving ``new_shape`` over the same storage in row-major order, or None.

    Size-1 dims are dropped first; then runs of old dims that are contiguous with each other are
    matched against runs of new dims with the same element count.
    """
    old = [(n, s) for n, s in zip(old_shape, old_strides) if n != 1]
    new_dims = list(new_shape)
    size = 1
    for n in new_dims:
        size *= n
    if size == 0:
        return row_major_strides(tuple(new_shape))
    out = [0] * len(new_dims)
    new_nz = [i for i, n in enumerate(new_dims) if n != 1]
    oi = ni = 0
    while oi < len(old) and ni < len(new_nz):
        o_end, n_end = oi + 1, ni + 1
        po, pn = old[oi][0], new_dims[new_nz[ni]]
        while po != pn:
            if po < pn:
                if o_end >= len(old):
                    return None
                po *= old[o_end][0]
                o_end += 1
            else:
                if n_end >= len(new_nz):
                    return None
                pn *= new_dims[new_nz[n_end]]
                n_end += 1
        for k in range(oi, o_end - 1):  # the old run must be contiguous
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        stride = old[o_end - 1][1]
        for j in range(n_end - 1, ni - 1, -1):
            out[new_nz[j]] = stride
            stride *= new_dims[new_nz[j]]
        oi, ni = o_end, n_end
    if oi != len(old) or ni != len(new_nz):
        return None
    for i, n in enumerate(new_dims):  # size-1 dims: any stride; use the next dim's extent
        if n == 1:
            out[i] = out[i + 1] * new_dims[i + 1] if i + 1 < len(new_dims) else 1
    return tuple(out)
