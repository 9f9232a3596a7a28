"""Builder methods of the indexed ops (tensor/ops/indexed.py): ``b.gather_rows``,
``b.scatter_rows``, ``b.take_along_axis``, ``b.one_hot``, ``b.dynamic_slice``,
``b.dynamic_update_slice``. ``Builder`` inherits them from ``IndexedBuilder``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir.dtypes import float32, get_dtype, int32
from ..ir.errors import BuildError
from . import ops, rules


class IndexedBuilder:
    """Mixin of ``nk.Builder``: NumPy-style arguments turned into the ops' canonical form."""

    def _index(self, x):
        """A 0-d index Value (an int becomes an int32 constant)."""
        return self.as_value(x) if not isinstance(x, (int, np.integer)) else self.full((), int(x), int32)

    def gather_rows(self, table, ids):
        """``table[ids]``: rows of ``table`` (along dim 0) picked by int32 / uint32 ``ids`` of any
        shape; the result has shape ``ids.shape + table.shape[1:]``."""
        return self.emit(ops.GatherRowsOp, [self.as_value(table), self.as_value(ids)])

    def scatter_rows(self, dst, ids, rows):
        """A copy of ``dst`` with row ``ids[k]`` replaced by ``rows[k]`` (rows of shape
        ``ids.shape + dst.shape[1:]``, cast to dst's dtype); a repeated id: the last k wins."""
        d = self.as_value(dst)
        r = self.cast(self.as_value(rows, like=d.dtype), d.dtype)
        return self.emit(ops.ScatterRowsOp, [d, self.as_value(ids), r])

    def take_along_axis(self, x, idx, axis):
        """np.take_along_axis(x, idx, axis) (indices in ``[-n, n)``; a negative axis counts
        from the end)."""
        v = self.as_value(x)
        ax = rules.normalize_axis("tensor.take_along_axis", axis, v.ndim)
        return self.emit(ops.TakeAlongAxisOp, [v, self.as_value(idx)], {"axis": ax})

    def one_hot(self, ids, depth: int, dtype=float32):
        """``ids[..., None] == arange(depth)`` as ``dtype`` (an id outside ``[0, depth)`` gives a
        row of zeros)."""
        return self.emit(ops.OneHotOp, [self.as_value(ids)], {"depth": int(depth), "dtype": get_dtype(dtype)})

    def _starts(self, name: str, starts, rank: int) -> list:
        if not isinstance(starts, (list, tuple)) or len(starts) != rank:
            raise BuildError(f"tensor.{name}: starts must be a list of {rank} 0-d int32 values or ints")
        out = []
        for d, s in enumerate(starts):
            if isinstance(s, (bool, np.bool_)) or not (
                isinstance(s, (int, np.integer)) or hasattr(s, "type")
            ):
                raise BuildError(f"tensor.{name}: start {d} must be a 0-d int32 Value or an int, got {s!r}")
            out.append(self._index(s))
        return out

    def dynamic_slice(self, x, starts: Sequence, sizes: Sequence[int]):
        """The window of ``sizes`` of ``x`` starting at runtime 0-d int32 ``starts`` (one per
        dim; ints are constants); the window must fit (no clamping)."""
        v = self.as_value(x)
        st = self._starts("dynamic_slice", starts, v.ndim)
        return self.emit(ops.DynamicSliceOp, [v, *st], {"sizes": tuple(int(n) for n in sizes)})

    def dynamic_update_slice(self, x, update, starts: Sequence):
        """A copy of ``x`` with the window at runtime 0-d int32 ``starts`` replaced by ``update``
        (cast to x's dtype); the window must fit (no clamping)."""
        v = self.as_value(x)
        u = self.cast(self.as_value(update, like=v.dtype), v.dtype)
        st = self._starts("dynamic_update_slice", starts, v.ndim)
        return self.emit(ops.DynamicUpdateSliceOp, [v, u, *st])
