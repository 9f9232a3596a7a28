"""Type base class and the registry the parser uses to read types back from text."""

from __future__ import annotations

from typing import ClassVar

TYPE_REGISTRY: dict[str, type[Type]] = {}


class Type:
    """Base of every IR type. Subclasses are immutable, hashable and compare by value.

    A subclass sets ``keyword`` and prints as ``keyword<body>`` (or plain ``keyword`` when
    ``has_body`` is False); ``from_body`` builds the type back from the text between ``<>``.
    """

    keyword: ClassVar[str] = ""
    has_body: ClassVar[bool] = True

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        key = cls.__dict__.get("keyword")
        if key:
            if key in TYPE_REGISTRY and TYPE_REGISTRY[key] is not cls:
                raise TypeError(f"type keyword {key!r} registered twice")
            TYPE_REGISTRY[key] = cls

    def body(self) -> str:
        raise NotImplementedError

    @classmethod
    def from_body(cls, body: str) -> Type:
        raise NotImplementedError

    def __str__(self) -> str:
        return f"{self.keyword}<{self.body()}>" if self.has_body else self.keyword

    def __repr__(self) -> str:
        return str(self)


class ShapedType(Type):
    """Base of immutable types with a static ``shape`` and a ``dtype`` (set by subclasses)."""

    __slots__ = ("shape", "dtype")

    def __setattr__(self, k, v):
        raise AttributeError(f"{type(self).__name__} is immutable")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize


def format_shape(shape: tuple[int, ...]) -> str:
    """Render a shape as the ``AxBxC`` prefix used inside type bodies (empty for rank 0)."""
    return "".join(f"{d}x" for d in shape)


def row_major_strides(shape) -> tuple[int, ...]:
    """Element strides of a contiguous row-major tensor of ``shape``."""
    out, acc = [], 1
    for d in reversed(tuple(shape)):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def parse_shape_and_rest(text: str) -> tuple[tuple[int, ...], str]:
    """Split ``'128x512xf32'`` into ``((128, 512), 'f32')``; raises ValueError on bad dims."""
    parts = text.strip().split("x")
    dims = []
    for i, p in enumerate(parts):
        if p.isascii() and p.isdigit():
            dims.append(int(p))
        elif p.startswith("-") and p[1:].isascii() and p[1:].isdigit() and i < len(parts) - 1:
            raise ValueError(f"negative dimension {p} in {text!r}; dimensions are >= 0")
        else:
            return tuple(dims), "x".join(parts[i:])
    raise ValueError(f"missing element type in {text!r}")
