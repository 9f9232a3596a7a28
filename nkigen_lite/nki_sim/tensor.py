"""NkiTensor: a strided view (offset, shape, strides in elements) over one Storage.

Views share storage. Indexing takes ints, slices (positive steps) and ``nl.ds``; every index
is bounds-checked (NumPy would clamp silently). An integer index on the partition dim of an
on-chip tensor keeps that dim with size 1; any other integer index drops its dim. ``.ap()``
builds a view from an explicit access pattern over the flattened storage.
"""

from __future__ import annotations

import math

import numpy as np

from .enums import sbuf
from .errors import NkiSimError, NkiSimIndexError
from .storage import Storage


def is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def compact_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def _is_compact(shape, strides) -> bool:
    return all(s == c for n, s, c in zip(shape, strides, compact_strides(shape)) if n != 1)


def _same_values_per_element(idx: np.ndarray, values: np.ndarray) -> bool:
    """True when every storage element written more than once receives one value (bit for bit)."""
    flat, vals = idx.reshape(-1), np.ascontiguousarray(values).reshape(-1)
    order = np.argsort(flat, kind="stable")
    f, raw = flat[order], vals[order].view(np.uint8).reshape(vals.size, -1)
    dup = f[1:] == f[:-1]
    return bool((raw[1:][dup] == raw[:-1][dup]).all())


class NkiTensor:
    """A tensor (or view) in HBM, SBUF or PSUM; dim 0 of an on-chip tensor is the partition dim."""

    __slots__ = ("storage", "offset", "shape", "strides", "from_ap", "_flat", "indirect")

    def __init__(self, storage: Storage, offset: int, shape, strides, from_ap: bool = False):
        self.storage = storage
        self.offset = offset
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.from_ap = from_ap
        self._flat = None
        self.indirect = None  # (index tensor, row size, rows) of a vector_offset view

    # -- attributes -----------------------------------------------------------------------
    @property
    def dtype(self):
        return self.storage.dtype

    @property
    def buffer(self):
        return self.storage.buffer

    @property
    def name(self) -> str:
        return self.storage.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def on_chip(self) -> bool:
        return self.storage.buffer.on_chip

    @property
    def partition_start(self) -> int:
        """First partition an on-chip view touches."""
        return self.offset // self.storage.free_size

    @property
    def free_size(self) -> int:
        """Elements per partition of this view (product of its free dims)."""
        return math.prod(self.shape[1:])

    def describe(self) -> str:
        """Human-readable description for error messages."""
        return f"view {list(self.shape)} of {self.storage.label()}"

    def __repr__(self) -> str:
        return f"NkiTensor({self.describe()})"

    # -- views ----------------------------------------------------------------------------
    def __getitem__(self, key) -> NkiTensor:
        key = self._expand_key(key)
        offset, shape, strides = self.offset, [], []
        for d, (k, n, s) in enumerate(zip(key, self.shape, self.strides)):
            if is_int(k):
                k = int(k)
                if not 0 <= k < n:
                    raise NkiSimError(f"index {k} out of bounds for dim {d} (size {n}) of {self.describe()}")
                offset += k * s
                if d == 0 and self.on_chip:
                    shape.append(1)
                    strides.append(s)
                continue
            if not isinstance(k, slice):
                raise NkiSimError(
                    f"unsupported index {k!r} for dim {d} of {self.describe()}: use ints, slices "
                    "or nl.ds(start, size)"
                )
            start, count, step = self._slice_bounds(k, n, d)
            if d == 0 and self.on_chip and step != 1 and count > 1:
                raise NkiSimError(
                    f"slice {k} on the partition dim of {self.describe()}: on-chip accesses cover "
                    "contiguous partitions (no partition striding) [ARCH-T1]"
                )
            offset += start * s
            shape.append(count)
            strides.append(s * step)
        return NkiTensor(self.storage, offset, shape, strides, self.from_ap)

    def _expand_key(self, key) -> tuple:
        key = key if isinstance(key, tuple) else (key,)
        n_ellipsis = sum(k is Ellipsis for k in key)
        if n_ellipsis > 1:
            raise NkiSimError(f"more than one '...' indexing {self.describe()}")
        if n_ellipsis:
            i = next(j for j, k in enumerate(key) if k is Ellipsis)
            fill = self.ndim - (len(key) - 1)
            key = key[:i] + (slice(None),) * max(fill, 0) + key[i + 1 :]
        if len(key) > self.ndim:
            raise NkiSimError(f"{len(key)} indices for {self.describe()} with {self.ndim} dims")
        return key + (slice(None),) * (self.ndim - len(key))

    def _slice_bounds(self, k: slice, n: int, d: int) -> tuple[int, int, int]:
        for part in (k.start, k.stop, k.step):
            if part is not None and not is_int(part):
                raise NkiSimError(f"slice {k} on dim {d} of {self.describe()} has a non-integer bound")
        start = 0 if k.start is None else int(k.start)
        stop = n if k.stop is None else int(k.stop)
        step = 1 if k.step is None else int(k.step)
        if step <= 0:
            raise NkiSimError(f"slice {k} on dim {d} of {self.describe()}: step must be positive")
        if start < 0 or stop < 0:
            raise NkiSimError(
                f"slice {start}:{stop} on dim {d} of {self.describe()}: negative bounds are not "
                "allowed (no wrap-around)"
            )
        if stop > n:
            raise NkiSimError(
                f"slice {start}:{stop} out of bounds for dim {d} (size {n}) of {self.describe()}"
            )
        if start >= stop:
            raise NkiSimError(f"slice {start}:{stop} on dim {d} of {self.describe()} is empty")
        return start, -(-(stop - start) // step), step

    def reshape(self, *shape) -> NkiTensor:
        """View with a new shape; the viewed elements must be contiguous (the partition dim kept)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = self._resolve_shape(shape)
        if self.on_chip:
            if not shape or shape[0] != self.shape[0]:
                raise NkiSimError(
                    f"reshape of {self.describe()} to {list(shape)} must keep the partition dim "
                    f"{self.shape[0]} first"
                )
            if not _is_compact(self.shape[1:], self.strides[1:]):
                raise NkiSimError(f"reshape of {self.describe()}: its free dims are not contiguous")
            strides = (self.strides[0],) + compact_strides(shape[1:])
        else:
            if not _is_compact(self.shape, self.strides):
                raise NkiSimError(f"reshape of {self.describe()}: the view is not contiguous")
            strides = compact_strides(shape)
        return NkiTensor(self.storage, self.offset, shape, strides, self.from_ap)

    def _resolve_shape(self, shape) -> tuple[int, ...]:
        if not all(is_int(n) and (n > 0 or n == -1) for n in shape) or list(shape).count(-1) > 1:
            raise NkiSimError(f"bad reshape target {shape} for {self.describe()}")
        known = math.prod(n for n in shape if n != -1)
        if -1 in shape:
            if self.size % known:
                raise NkiSimError(f"cannot reshape {self.describe()} to {list(shape)}")
            shape = tuple(self.size // known if n == -1 else n for n in shape)
        if math.prod(shape) != self.size:
            raise NkiSimError(
                f"reshape of {self.describe()} ({self.size} elements) to {list(shape)} changes the "
                "element count"
            )
        return tuple(int(n) for n in shape)

    def ap(self, pattern, offset: int = 0, vector_offset=None, indirect_dim: int = 0, scalar_offset=None):
        """View given by an access pattern [[step, num], ...] (outermost first) over the storage.
        With ``vector_offset`` (an SBUF (P, 1) int32 / uint32 tensor) the view is indirect: its
        dim 0 walks rows ``vector_offset[p]`` of this HBM tensor, each row
        ``prod(self.shape[1:])`` elements (the pattern's leading step is ignored, as on the
        hardware); an index outside ``[0, self.shape[0])`` raises when the DMA runs."""
        if scalar_offset is not None:
            raise NkiSimError(".ap(scalar_offset=...) is not modelled by the simulator")
        if vector_offset is not None:
            return self._indirect_ap(pattern, offset, vector_offset, indirect_dim)
        pairs = self._check_pattern(pattern)
        if not is_int(offset) or offset < 0:
            raise NkiSimError(f".ap offset {offset!r} on {self.storage.label()} must be an int >= 0")
        st = self.storage
        if st.buffer.on_chip:
            self._check_on_chip_pattern(pairs, int(offset))
        else:
            lo = offset + sum(min(0, s * (n - 1)) for s, n in pairs)
            hi = offset + sum(max(0, s * (n - 1)) for s, n in pairs)
            if lo < 0 or hi >= st.size:
                raise NkiSimError(
                    f".ap(pattern={pattern}, offset={offset}) reaches elements {lo}..{hi} outside "
                    f"{st.label()} ({st.size} elements)"
                )
        return NkiTensor(st, int(offset), [n for _, n in pairs], [s for s, _ in pairs], True)

    def _indirect_ap(self, pattern, offset, index, indirect_dim) -> NkiTensor:
        pairs = self._check_pattern(pattern)
        where = f".ap(vector_offset=...) on {self.storage.label()}"
        if indirect_dim != 0:
            raise NkiSimError(f"{where}: indirect_dim={indirect_dim}; only indirect_dim=0 exists [APS]")
        if self.on_chip:
            raise NkiSimError(f"{where}: the tensor indexed by vector_offset must be in HBM [APS]")
        if not isinstance(index, NkiTensor) or index.buffer is not sbuf:
            raise NkiSimError(f"{where}: vector_offset must be an SBUF tensor, got {index!r} [APS]")
        if index.ndim != 2 or index.shape[1] != 1 or index.shape[0] != pairs[0][1]:
            raise NkiSimError(
                f"{where}: vector_offset {index.describe()} must be a ({pairs[0][1]}, 1) column, one "
                "index per row of the pattern"
            )
        if index.dtype.numpy_name not in ("int32", "uint32"):
            raise NkiSimError(f"{where}: vector_offset must be int32 or uint32, got {index.dtype.numpy_name}")
        if not is_int(offset) or offset < 0:
            raise NkiSimError(f"{where}: offset {offset!r} must be an int >= 0")
        if not self.shape or not _is_compact(self.shape, self.strides):
            raise NkiSimError(f"{where}: the indexed tensor must be a whole (contiguous) tensor")
        row = math.prod(self.shape[1:])
        span = int(offset) + sum(max(0, s * (n - 1)) for s, n in pairs[1:])
        if span >= row:
            raise NkiSimError(f"{where}: the row pattern reaches element {span} of a {row}-element row")
        shape, strides = [n for _, n in pairs], [0] + [s for s, _ in pairs[1:]]
        v = NkiTensor(self.storage, self.offset + int(offset), shape, strides, True)
        v.indirect = (index, row, self.shape[0])
        return v

    def _check_pattern(self, pattern) -> list[tuple[int, int]]:
        ok = (
            isinstance(pattern, (list, tuple))
            and len(pattern) > 0
            and all(
                isinstance(p, (list, tuple)) and len(p) == 2 and is_int(p[0]) and is_int(p[1]) and p[1] > 0
                for p in pattern
            )
        )
        if not ok:
            raise NkiSimError(
                f".ap pattern {pattern!r} on {self.storage.label()} must be a non-empty list of "
                "[step, num] int pairs with num > 0"
            )
        return [(int(s), int(n)) for s, n in pattern]

    def _check_on_chip_pattern(self, pairs, offset: int) -> None:
        st = self.storage
        f = st.free_size
        (p_step, p_num), free = pairs[0], pairs[1:]
        if p_num > 1 and p_step != f:
            raise NkiSimError(
                f".ap on {st.label()}: the partition step {p_step} must equal the {f} elements per "
                "partition (no partition striding or broadcast on chip) [APS] [ARCH-T1]"
            )
        p0, f0 = divmod(offset, f)
        if p0 + p_num > st.shape[0]:
            raise NkiSimError(f".ap on {st.label()}: partitions {p0}..{p0 + p_num - 1} out of bounds")
        lo = f0 + sum(min(0, s * (n - 1)) for s, n in free)
        hi = f0 + sum(max(0, s * (n - 1)) for s, n in free)
        if lo < 0 or hi >= f:
            raise NkiSimError(
                f".ap on {st.label()}: free offsets {lo}..{hi} leave the partition (0..{f - 1})"
            )

    # -- element access -------------------------------------------------------------------
    def flat_index(self) -> np.ndarray:
        """Storage index of every element of the view, shaped like the view (an indirect view
        reads its index tensor now: the DMA's run-time bounds check)."""
        if self.indirect is not None:
            index, row, rows = self.indirect
            ids = index.read("indirect DMA index").reshape(-1).astype(np.int64)
            bad = (ids < 0) | (ids >= rows)
            if bad.any():
                p = int(np.argmax(bad))
                raise NkiSimIndexError(
                    f"indirect DMA: index {int(ids[p])} (partition {p}) is out of bounds for the "
                    f"{rows} rows of {self.storage.label()} (oob_mode.error)"
                )
            idx = np.full(self.shape, self.offset, np.int64)
            for d, (n, s) in enumerate(zip(self.shape, self.strides)):
                shape = [1] * self.ndim
                shape[d] = n
                step = ids * row if d == 0 else np.arange(n, dtype=np.int64) * s
                idx = idx + step.reshape(shape)
            return idx
        if self._flat is None:
            idx = np.full(self.shape, self.offset, np.int64)
            for d, (n, s) in enumerate(zip(self.shape, self.strides)):
                shape = [1] * self.ndim
                shape[d] = n
                idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(shape)
            self._flat = idx
        return self._flat

    def check_live(self, where: str) -> None:
        """Reject tensors of a finished kernel call."""
        if not self.storage.run.active:
            raise NkiSimError(f"{where}: {self.describe()} belongs to a kernel call that has ended")

    def read(self, where: str) -> np.ndarray:
        """Stored values of the view (storage dtype); raises on unwritten elements."""
        self.check_live(where)
        idx = self.flat_index()
        written = self.storage.written[idx]
        if not written.all():
            first = tuple(int(i) for i in np.argwhere(~written)[0])
            raise NkiSimError(
                f"{where}: reads uninitialised element {first} of {self.describe()} "
                f"({int((~written).sum())} of {written.size} elements never written)"
            )
        return self.storage.data[idx]

    def write(self, values: np.ndarray, where: str, matmul: bool = False, mask=None) -> None:
        """Store values (already in the storage dtype) into the view (where mask) and mark them written."""
        self.check_live(where)
        st = self.storage
        if st.read_only:
            raise NkiSimError(f"{where}: writes kernel input {st.label()} (inputs are read-only)")
        idx = self.flat_index()
        values = np.broadcast_to(values, self.shape)
        if self.from_ap and np.unique(idx).size != idx.size:
            if self.indirect is None or not _same_values_per_element(idx, values):
                why = " with differing values (an indirect DMA's write order is unspecified)"
                raise NkiSimError(
                    f"{where}: destination {self.describe()} writes some elements more than once"
                    + (why if self.indirect else "")
                )
        if mask is not None:
            idx, values = idx[mask], values[mask]
        st.data[idx] = values
        st.written[idx] = True
        if st.mm_init is not None:
            st.mm_init[idx] = matmul

    # -- guards against NumPy habits -------------------------------------------------------
    def __setitem__(self, key, value):
        raise NkiSimError(
            f"item assignment on {self.describe()}: write tensors with nisa.* instructions (dst=...)"
        )

    def __iter__(self):
        raise NkiSimError(f"iterating over {self.describe()}: index it explicitly")

    def __array__(self, *args, **kwargs):
        raise NkiSimError(f"{self.describe()} cannot be converted to a NumPy array inside a kernel")

    def _no_arith(self, *_args):
        raise NkiSimError(f"Python arithmetic on {self.describe()}: use nisa.tensor_tensor / tensor_scalar")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arith
    __truediv__ = __rtruediv__ = __matmul__ = __neg__ = __pow__ = _no_arith
