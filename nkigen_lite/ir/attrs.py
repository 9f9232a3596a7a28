"""Typed, frozen op attributes: each kind converts, validates, prints and re-reads a value.

The parser reads attribute values as generic literals (int, float, quoted str, bare ``Ident``,
list, ``DenseLiteral``); the op's attribute kind turns the literal into the stored value, so the
text stays readable (``dtype = bf16``) while the stored value stays typed (a ``DType``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import DType, get_dtype
from .errors import BuildError

REQUIRED = object()


class Ident(str):
    """A bare identifier read from text (``sum``, ``bf16``, ``true``), as opposed to a string."""


@dataclass(frozen=True)
class DenseLiteral:
    """A dense array literal as parsed: ``dense<2x3xf32, "hex bytes">`` (``data``: the bytes)."""

    shape: tuple[int, ...]
    dtype: DType
    data: bytes


class FrozenArray:
    """A read-only NumPy array usable as an attribute value (hashable, compared by content)."""

    __slots__ = ("array", "_key")

    def __init__(self, array, dtype: DType | None = None):
        dtype = dtype or get_dtype(np.asarray(array).dtype)
        a = np.array(array, dtype=dtype.np_dtype, copy=True)
        a.setflags(write=False)
        self.array = a
        self._key = (dtype.name, a.shape, a.tobytes())

    @property
    def dtype(self) -> DType:
        return get_dtype(self._key[0])

    def __eq__(self, other):
        return isinstance(other, FrozenArray) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return f"FrozenArray({self.array!r})"


class AttrKind:
    """How one attribute is converted, validated and printed."""

    name = "attr"

    def convert(self, v: Any) -> Any:
        raise NotImplementedError

    def format(self, v: Any) -> str:
        raise NotImplementedError


def _fail(kind: AttrKind, v: Any) -> BuildError:
    return BuildError(f"expected {kind.name}, got {v!r}")


class _Int(AttrKind):
    name = "an integer"

    def convert(self, v):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise _fail(self, v)
        return int(v)

    def format(self, v):
        return str(v)


class _Float(AttrKind):
    name = "a number"

    def convert(self, v):
        if isinstance(v, Ident) and v in ("inf", "nan"):
            return float(v)
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise _fail(self, v)
        return float(v)

    def format(self, v):
        return format_float(v)


class _Bool(AttrKind):
    name = "true or false"

    def convert(self, v):
        if isinstance(v, Ident) and v in ("true", "false"):
            return v == "true"
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        raise _fail(self, v)

    def format(self, v):
        return "true" if v else "false"


class _Str(AttrKind):
    name = "a string"

    def convert(self, v):
        if isinstance(v, Ident) or not isinstance(v, str):
            raise _fail(self, v)
        return str(v)

    def format(self, v):
        return quote_string(v)


class _DTypeKind(AttrKind):
    name = "a dtype"

    def convert(self, v):
        try:
            return get_dtype(v)
        except BuildError:
            raise _fail(self, v) from None

    def format(self, v):
        return v.name


class _Scalar(AttrKind):
    """A bool, int or float (e.g. the fill value of ``tensor.full``)."""

    name = "a scalar"

    def convert(self, v):
        if isinstance(v, Ident):
            if v in ("true", "false"):
                return v == "true"
            if v in ("inf", "nan"):
                return float(v)
            raise _fail(self, v)
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            return float(v)
        raise _fail(self, v)

    def format(self, v):
        if isinstance(v, bool):
            return "true" if v else "false"
        return format_float(v) if isinstance(v, float) else str(v)


class EnumAttr(AttrKind):
    """One of a fixed set of names, stored as a plain string."""

    def __init__(self, *choices: str):
        self.choices = tuple(choices)
        self.name = "one of " + ", ".join(choices)

    def convert(self, v):
        if isinstance(v, str) and v in self.choices:
            return str(v)
        raise _fail(self, v)

    def format(self, v):
        return v


class TupleOf(AttrKind):
    """A tuple whose elements all have one kind (printed as ``[a, b]``)."""

    def __init__(self, elem: AttrKind):
        self.elem = elem
        self.name = f"a list of {elem.name}"

    def convert(self, v):
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
            raise _fail(self, v)
        return tuple(self.elem.convert(x) for x in v)

    def format(self, v):
        return "[" + ", ".join(self.elem.format(x) for x in v) + "]"


class OptionalOf(AttrKind):
    """A value of some kind, or None (printed ``none``)."""

    def __init__(self, inner: AttrKind):
        self.inner = inner
        self.name = f"{inner.name} or none"

    def convert(self, v):
        if v is None or (isinstance(v, Ident) and v == "none"):
            return None
        return self.inner.convert(v)

    def format(self, v):
        return "none" if v is None else self.inner.format(v)


class _Dense(AttrKind):
    name = "a dense array"

    def convert(self, v):
        if isinstance(v, FrozenArray):
            return v
        if isinstance(v, DenseLiteral):
            raw = v.data
            n = math.prod(v.shape)  # Python ints: no int64 overflow on absurd shapes
            if len(raw) != n * v.dtype.itemsize:
                raise BuildError(
                    f"dense literal holds {len(raw)} bytes, expected {n * v.dtype.itemsize} "
                    f"for {v.shape} {v.dtype}"
                )
            arr = np.frombuffer(raw, dtype=v.dtype.np_dtype).reshape(v.shape)
            return FrozenArray(arr, v.dtype)
        if isinstance(v, np.ndarray):
            return FrozenArray(v)
        raise _fail(self, v)

    def format(self, v: FrozenArray):
        a = v.array
        shape = "".join(f"{d}x" for d in a.shape)
        return f'dense<{shape}{v.dtype.name}, "{a.astype(a.dtype.newbyteorder("<")).tobytes().hex()}">'

    def format_elided(self, v: FrozenArray) -> str:
        """The human-facing form of a large constant: shape and dtype, no data."""
        shape = "".join(f"{d}x" for d in v.array.shape)
        return f"dense<{shape}{v.dtype.name}, {ELIDED}>"


ELIDED = "__elided__"  # stands for the data of a dense constant in human-facing text


INT = _Int()
FLOAT = _Float()
BOOL = _Bool()
STR = _Str()
DTYPE = _DTypeKind()
SCALAR = _Scalar()
DENSE = _Dense()
INT_TUPLE = TupleOf(INT)


@dataclass(frozen=True)
class Attr:
    """Declaration of one attribute of an op class: name, kind and default."""

    name: str
    kind: AttrKind
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


def format_float(v: float) -> str:
    """Shortest text that reads back as exactly the same float (always has '.', 'e' or is inf/nan)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    s = repr(float(v))
    return s if any(c in s for c in ".en") else s + ".0"


def quote_string(s: str) -> str:
    """Quote a string with escapes for '"', '\\' and control characters."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
