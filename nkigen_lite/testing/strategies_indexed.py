"""Random instances of the indexed ops for ``tensor_graphs`` (strategies.py): indices are
drawn in range (out-of-range indices are the interpreters' errors, tested on their own), start
indices are sometimes runtime values (an element of an integer value, clipped into range)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..ir.dtypes import int32, uint32

INDEXED_NAMES = (
    "gather_rows",
    "scatter_rows",
    "take_along_axis",
    "one_hot",
    "dynamic_slice",
    "dynamic_update_slice",
)


class IndexedGen:
    """Mixin of strategies._Gen: one method per indexed op (None when nothing fits)."""

    def _ids(self, shape, lo: int, hi: int, dtype=int32):
        rng = np.random.default_rng(self.draw(st.integers(0, 2**16)))
        return self.b.constant(rng.integers(lo, hi, size=shape).astype(dtype.np_dtype), dtype)

    def _small_shape(self, rank_max: int = 2):
        rank = self.draw(st.integers(0, rank_max))
        return tuple(self.draw(st.integers(1, min(self.max_dim, 200))) for _ in range(rank))

    def _table(self, pred=lambda _v: True):
        return self.value(lambda v: v.ndim >= 1 and 0 not in v.shape and pred(v))

    def gather_rows(self):
        t = self._table()
        if t is None:
            return None
        shape = self._small_shape()
        if int(np.prod(shape, dtype=np.int64)) * (t.type.size // t.shape[0]) > self.max_elements:
            return None
        dt = self.pick((int32, uint32))
        return self.b.gather_rows(t, self._ids(shape, 0, t.shape[0], dt))

    def scatter_rows(self):
        t = self._table(lambda v: not v.dtype.is_bool)
        if t is None:
            return None
        n = t.shape[0]
        k = self.draw(st.integers(1, 2 * n))
        ids = self._ids((k,), 0, n)
        rows = self.b.gather_rows(t, self._ids((k,), 0, n)) * 2
        return self.b.scatter_rows(t, ids, rows)

    def take_along_axis(self):
        x = self._table()
        if x is None:
            return None
        axis = self.draw(st.integers(0, x.ndim - 1))
        shape = [
            self.draw(st.integers(1, min(self.max_dim, 40)))
            if d == axis
            else (1 if self.draw(st.integers(0, 3)) == 0 else n)
            for d, n in enumerate(x.shape)
        ]
        out = [a if d == axis else max(a, b) for d, (a, b) in enumerate(zip(shape, x.shape))]
        if int(np.prod(out)) > self.max_elements:
            return None
        n = x.shape[axis]
        ax = axis - x.ndim if self.draw(st.booleans()) else axis
        return self.b.take_along_axis(x, self._ids(tuple(shape), -n, n), ax)

    def one_hot(self):
        ids = self.value(lambda v: v.dtype.is_int and v.type.size * 20 <= self.max_elements)
        if ids is None:
            return None
        return self.b.one_hot(ids, self.draw(st.integers(1, 20)), self.pick(self.dtypes))

    def _start(self, n: int, size: int):
        """A start in [0, n - size]: a constant, or a runtime element of an int32 value."""
        src = self.value(lambda v: v.dtype is int32 and 0 not in v.shape)
        if src is None or self.draw(st.booleans()):
            return self.draw(st.integers(0, n - size))
        el = src[(0,) * src.ndim] if src.ndim else src
        return self.b.clip(el, 0, n - size)

    def _window(self, x):
        sizes = [self.draw(st.integers(1, n)) for n in x.shape]
        return sizes, [self._start(n, s) for n, s in zip(x.shape, sizes)]

    def dynamic_slice(self):
        x = self._table()
        if x is None:
            return None
        sizes, starts = self._window(x)
        return self.b.dynamic_slice(x, starts, sizes)

    def dynamic_update_slice(self):
        x = self._table(lambda v: not v.dtype.is_bool)
        if x is None:
            return None
        sizes, starts = self._window(x)
        upd = x[tuple(slice(0, s) for s in sizes)] * 2
        return self.b.dynamic_update_slice(x, upd, starts)
