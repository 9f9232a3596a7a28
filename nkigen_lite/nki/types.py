"""NKI types (memory spaces, on-chip tiles, HBM tensors, loop indices) and the Python-level
access vocabulary: ``Affine`` loop-index expressions, ``DimSlice`` and the ``ts``/``ds`` helpers.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from ..ir.dtypes import DType, get_dtype
from ..ir.errors import BuildError
from ..ir.types import ShapedType, Type, format_shape, parse_shape_and_rest
from ..ir.value import Value


class MemorySpace(enum.Enum):
    """Where a tensor lives: device HBM, the on-chip SBUF, or the matmul accumulator PSUM."""

    HBM = "hbm"
    SBUF = "sbuf"
    PSUM = "psum"

    @classmethod
    def get(cls, spec) -> MemorySpace:
        """Resolve a MemorySpace or its name ("hbm", "sbuf", "psum")."""
        if isinstance(spec, MemorySpace):
            return spec
        try:
            return cls(str(spec).lower())
        except ValueError:
            raise BuildError(f"unknown memory space {spec!r}; use hbm, sbuf or psum") from None


def _shape(shape, what: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in shape)
    except TypeError:
        raise BuildError(f"{what} shape {shape!r} is not a sequence of integers") from None
    if any(d <= 0 for d in dims):
        raise BuildError(f"{what} shape {dims} must have positive dimensions")
    return dims


class TileType(ShapedType):
    """An on-chip tile in SBUF or PSUM: ``tile<128x512xf32, sbuf>``; dim 0 is the partition dim."""

    keyword = "tile"
    __slots__ = ("space",)

    def __init__(self, shape, dtype, space):
        shape = _shape(shape, "tile")
        if len(shape) < 2:
            raise BuildError(f"tile shape {shape} needs a partition dim and at least one free dim")
        space = MemorySpace.get(space)
        if space is MemorySpace.HBM:
            raise BuildError("a tile lives in sbuf or psum; use HbmType for HBM tensors")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", get_dtype(dtype))
        object.__setattr__(self, "space", space)

    @property
    def partitions(self) -> int:
        return self.shape[0]

    @property
    def free_size(self) -> int:
        """Elements per partition."""
        return self.size // self.shape[0]

    @property
    def bytes_per_partition(self) -> int:
        return self.free_size * self.dtype.itemsize

    def __eq__(self, other):
        return (
            isinstance(other, TileType)
            and self.shape == other.shape
            and self.dtype is other.dtype
            and self.space is other.space
        )

    def __hash__(self):
        return hash(("tile", self.shape, self.dtype.name, self.space.value))

    def body(self) -> str:
        return f"{format_shape(self.shape)}{self.dtype.name}, {self.space.value}"

    @classmethod
    def from_body(cls, body: str) -> TileType:
        head, sep, space = body.partition(",")
        if not sep:
            raise ValueError("expected tile<SHAPExDTYPE, SPACE>")
        shape, dt = parse_shape_and_rest(head)
        return cls(shape, get_dtype(dt.strip()), space.strip())


class HbmType(ShapedType):
    """A tensor in device HBM (row-major, contiguous unless it is a view): ``hbm<300x512xf32>``."""

    keyword = "hbm"

    def __init__(self, shape, dtype):
        object.__setattr__(self, "shape", _shape(shape, "hbm tensor"))
        object.__setattr__(self, "dtype", get_dtype(dtype))

    space = MemorySpace.HBM

    def __eq__(self, other):
        return isinstance(other, HbmType) and self.shape == other.shape and self.dtype is other.dtype

    def __hash__(self):
        return hash(("hbm", self.shape, self.dtype.name))

    def body(self) -> str:
        return f"{format_shape(self.shape)}{self.dtype.name}"

    @classmethod
    def from_body(cls, body: str) -> HbmType:
        shape, dt = parse_shape_and_rest(body)
        return cls(shape, get_dtype(dt.strip()))


class IndexType(Type):
    """The type of a loop induction variable (``index``)."""

    keyword = "index"
    has_body = False

    def __eq__(self, other):
        return isinstance(other, IndexType)

    def __hash__(self):
        return hash("index")

    @classmethod
    def from_body(cls, _body: str) -> IndexType:
        return INDEX


INDEX = IndexType()
MemType = (TileType, HbmType)


def space_of(t) -> MemorySpace:
    """Memory space of a tile or HBM type."""
    return t.space


def is_index(v) -> bool:
    return isinstance(v, Value) and isinstance(v.type, IndexType)


class Affine:
    """``const + sum(coeff * index)`` over loop index Values; immutable, built with + - *."""

    __slots__ = ("const", "terms")

    def __init__(self, const: int = 0, terms: tuple[tuple[Value, int], ...] = ()):
        object.__setattr__(self, "const", int(const))
        object.__setattr__(self, "terms", tuple((v, int(c)) for v, c in terms if c != 0))

    def __setattr__(self, k, v):
        raise AttributeError("Affine is immutable")

    @staticmethod
    def of(x) -> Affine:
        """Convert an int, an index Value or an Affine."""
        if isinstance(x, Affine):
            return x
        if isinstance(x, bool):
            raise BuildError(f"expected an integer or a loop index, got {x!r}")
        if isinstance(x, (int, np.integer)):
            return Affine(int(x))
        if is_index(x):
            return Affine(0, ((x, 1),))
        raise BuildError(f"expected an integer or a loop index, got {x!r}")

    @property
    def is_const(self) -> bool:
        return not self.terms

    def _combine(self, other, sign: int) -> Affine:
        o = Affine.of(other)
        terms = dict.fromkeys([v for v, _ in self.terms])
        coeff = {id(v): c for v, c in self.terms}
        for v, c in o.terms:
            if id(v) not in coeff:
                terms[v] = None
                coeff[id(v)] = 0
            coeff[id(v)] += sign * c
        return Affine(self.const + sign * o.const, tuple((v, coeff[id(v)]) for v in terms))

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return Affine.of(other)._combine(self, -1)

    def __neg__(self):
        return Affine(-self.const, tuple((v, -c) for v, c in self.terms))

    def __mul__(self, k):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise BuildError("loop-index expressions must stay affine: multiply only by integers")
        k = int(k)
        return Affine(self.const * k, tuple((v, c * k) for v, c in self.terms))

    __rmul__ = __mul__

    def minus(self, other) -> int | None:
        """``self - other`` when it is a constant, else None."""
        d = self - other
        return d.const if d.is_const else None

    def __eq__(self, other):
        if not isinstance(other, Affine):
            return NotImplemented
        key = lambda a: (a.const, sorted((id(v), c) for v, c in a.terms))  # noqa: E731
        return key(self) == key(other)

    def __hash__(self):
        return hash((self.const, tuple(sorted((id(v), c) for v, c in self.terms))))

    def __repr__(self):
        parts = [f"{v.name_hint or '?'}*{c}" for v, c in self.terms]
        return "Affine(" + " + ".join(parts + [str(self.const)]) + ")"


@dataclass(frozen=True)
class DimSlice:
    """One dim of an access: elements ``offset + k*stride`` for ``k < size`` (offset affine)."""

    offset: Affine
    size: int
    stride: int = 1

    def __post_init__(self):
        object.__setattr__(self, "offset", Affine.of(self.offset))
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size <= 0:
            raise BuildError(f"slice size must be a positive integer, got {self.size!r}")
        if isinstance(self.stride, bool) or not isinstance(self.stride, int) or self.stride < 0:
            raise BuildError(f"slice stride must be a non-negative integer, got {self.stride!r}")


def ds(start, size: int, stride: int = 1) -> DimSlice:
    """``size`` elements from ``start`` (an int or loop-index expression), every ``stride``."""
    return DimSlice(Affine.of(start), int(size), int(stride))


def access_of(tensor, *dims) -> Access:
    """Access of ``tensor``: each dim a DimSlice, or a tuple ``(start, size[, stride])`` for ``ds``."""
    return Access(tensor, tuple(ds(*d) if isinstance(d, tuple) else d for d in dims))


def ts(i, size: int) -> DimSlice:
    """Tile ``i`` of size ``size``: ``ds(i * size, size)``."""
    return DimSlice(Affine.of(i) * int(size), int(size), 1)


@dataclass(frozen=True, eq=False)
class Access:
    """A window of a tensor Value: one DimSlice per dim of the tensor."""

    tensor: Value
    dims: tuple[DimSlice, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dims)

    @property
    def dtype(self) -> DType:
        return self.tensor.type.dtype

    @property
    def space(self) -> MemorySpace:
        return self.tensor.type.space

    def free_pattern(self) -> list[tuple[int, int]] | None:
        """The free dims of this tile access as ``[(step, num), ...]`` in flat per-partition
        elements, size-1 dims dropped and contiguous neighbours merged (None for HBM)."""
        if self.space is MemorySpace.HBM:
            return None
        shape = self.tensor.type.shape
        strides, acc = [], 1
        for n in reversed(shape[1:]):
            strides.append(acc)
            acc *= n
        strides.reverse()
        out: list[tuple[int, int]] = []
        for d, s in zip(self.dims[1:], strides):
            if d.size == 1:
                continue
            step = d.stride * s
            if out and out[-1][0] == step * d.size:
                out[-1] = (step, out[-1][1] * d.size)
            else:
                out.append((step, d.size))
        return out

    @property
    def partitions(self) -> int:
        return self.dims[0].size if self.dims else 1  # a rank-0 HBM access is one element

    @property
    def free_size(self) -> int:
        n = 1
        for d in self.dims[1:]:
            n *= d.size
        return n

    @property
    def size(self) -> int:
        return self.partitions * self.free_size

    @staticmethod
    def whole(v: Value) -> Access:
        """The access covering all of ``v``."""
        return Access(v, tuple(DimSlice(Affine(0), n, 1) for n in v.type.shape))

    def is_whole(self) -> bool:
        return all(
            d.offset.is_const and d.offset.const == 0 and d.stride == 1 and d.size == n
            for d, n in zip(self.dims, self.tensor.type.shape)
        )
