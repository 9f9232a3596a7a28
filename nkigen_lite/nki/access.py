"""How accesses are stored in ops and written as text.

An op keeps each tensor access as an ``AccessSpec`` attribute whose tensor and loop indices are
operand positions, so the index Values are real operands (use-lists, dominance and DCE see
them) while the attribute stays frozen data. Text form: ``%t[0:128, ds(%i*128 + 64, 128)]``, a
bare ``%t`` for the whole tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ir.attrs import SCALAR, AttrKind, Ident
from ..ir.errors import BuildError
from ..ir.value import Value
from .types import Access, Affine, DimSlice, is_index


@dataclass(frozen=True)
class AffineSpec:
    """Stored affine expression: ``const + sum(coeff * operand[pos])``."""

    const: int
    terms: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class SliceSpec:
    """Stored DimSlice."""

    offset: AffineSpec
    size: int
    stride: int


@dataclass(frozen=True)
class AccessSpec:
    """Stored access: the tensor's operand position and one SliceSpec per tensor dim."""

    tensor: int
    dims: tuple[SliceSpec, ...]


# ---- attribute kinds --------------------------------------------------------------------------


class _AccessKind(AttrKind):
    """A tensor access; optionally also an immediate number, optionally absent (None)."""

    def __init__(self, scalar_ok: bool = False, optional: bool = False):
        self.scalar_ok, self.optional = scalar_ok, optional
        self.name = (
            "a tensor access" + (" or a number" if scalar_ok else "") + (" or none" if optional else "")
        )

    def convert(self, v):
        if isinstance(v, AccessSpec):
            return v
        if self.optional and (v is None or (isinstance(v, Ident) and v == "none")):
            return None
        if self.scalar_ok and isinstance(v, Ident) and v in ("inf", "nan"):
            return float(v)
        if self.scalar_ok and not isinstance(v, (bool, str)) and isinstance(v, (int, float)):
            return v
        raise BuildError(f"expected {self.name}, got {v!r}")

    def format(self, v):
        if isinstance(v, AccessSpec):
            return format_access(v, lambda p: f"#{p}")
        return "none" if v is None else SCALAR.format(v)


class _AffineKind(AttrKind):
    name = "an integer or loop-index expression"

    def convert(self, v):
        if isinstance(v, AffineSpec):
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            raise BuildError(f"expected {self.name}, got {v!r}")
        return AffineSpec(int(v))

    def format(self, v):
        return format_affine(v, lambda p: f"#{p}")


ACCESS = _AccessKind()
OPT_ACCESS = _AccessKind(optional=True)
ACCESS_OR_SCALAR = _AccessKind(scalar_ok=True)
OPT_ACCESS_OR_SCALAR = _AccessKind(scalar_ok=True, optional=True)
ACCESS_KINDS = (ACCESS, OPT_ACCESS, ACCESS_OR_SCALAR, OPT_ACCESS_OR_SCALAR)
AFFINE = _AffineKind()


# ---- packing Python-level accesses into operands + specs -------------------------------------


def pack(items: list[tuple[str, object]]) -> tuple[list[Value], dict[str, object]]:
    """Turn ``[(attr name, Access | Affine | other)]`` into (operands, attrs) canonically:
    tensors of the accesses first (in order), then each distinct loop index once."""
    operands: list[Value] = []
    index_pos: dict[int, int] = {}
    tensor_pos: dict[str, int] = {}
    for key, val in items:
        if isinstance(val, Access):
            tensor_pos[key] = len(operands)
            operands.append(val.tensor)

    def affine(a: Affine) -> AffineSpec:
        terms = []
        for v, c in a.terms:
            if not is_index(v):
                raise BuildError(f"loop-index expression uses {v!r}, which is not a loop index")
            if id(v) not in index_pos:
                index_pos[id(v)] = len(operands)
                operands.append(v)
            terms.append((index_pos[id(v)], c))
        return AffineSpec(a.const, tuple(terms))

    attrs: dict[str, object] = {}
    for key, val in items:
        if isinstance(val, Access):
            dims = tuple(SliceSpec(affine(d.offset), d.size, d.stride) for d in val.dims)
            attrs[key] = AccessSpec(tensor_pos[key], dims)
        elif isinstance(val, Affine):
            attrs[key] = affine(val)
        else:
            attrs[key] = val
    return operands, attrs


def unpack_affine(spec: AffineSpec, operands) -> Affine:
    """The Affine (over index Values) a stored expression denotes."""
    return Affine(spec.const, tuple((operands[p], c) for p, c in spec.terms))


def unpack_access(spec: AccessSpec, operands) -> Access:
    """The Access (over Values) a stored access denotes."""
    return Access(
        operands[spec.tensor],
        tuple(DimSlice(unpack_affine(d.offset, operands), d.size, d.stride) for d in spec.dims),
    )


def positions(spec) -> list[int]:
    """Operand positions an AccessSpec or AffineSpec refers to."""
    if isinstance(spec, AffineSpec):
        return [p for p, _ in spec.terms]
    out = [spec.tensor]
    for d in spec.dims:
        out.extend(p for p, _ in d.offset.terms)
    return out


# ---- text --------------------------------------------------------------------------------------


def format_affine(spec: AffineSpec, name: Callable[[int], str]) -> str:
    """``%i*128 + %j - 4`` (terms in operand order, then the constant)."""
    parts: list[str] = []
    for p, c in spec.terms:
        term = name(p) if abs(c) == 1 else f"{name(p)}*{abs(c)}"
        if not parts:
            parts.append(term if c > 0 else (f"{name(p)}*{c}"))
        else:
            parts.append(("+ " if c > 0 else "- ") + term)
    if not parts:
        return str(spec.const)
    if spec.const:
        parts.append(("+ " if spec.const > 0 else "- ") + str(abs(spec.const)))
    return " ".join(parts)


def format_slice(d: SliceSpec, name: Callable[[int], str]) -> str:
    if not d.offset.terms and d.stride == 1:
        return f"{d.offset.const}:{d.offset.const + d.size}"
    tail = f", {d.stride}" if d.stride != 1 else ""
    return f"ds({format_affine(d.offset, name)}, {d.size}{tail})"


def format_access(spec: AccessSpec, name: Callable[[int], str], shape=None) -> str:
    """``%t[...]``; just ``%t`` when ``shape`` is given and the access covers all of it."""
    if (
        shape is not None
        and len(shape) == len(spec.dims)
        and all(
            not d.offset.terms and d.offset.const == 0 and d.stride == 1 and d.size == n
            for d, n in zip(spec.dims, shape)
        )
    ):
        return name(spec.tensor)
    return f"{name(spec.tensor)}[" + ", ".join(format_slice(d, name) for d in spec.dims) + "]"


def _parse_term(ps) -> Affine:
    tok = ps.peek()
    if tok.kind == "int":
        k = ps.take().value
        if ps.at_on_line("*"):
            ps.take()
            return Affine.of(_index_ref(ps)) * k
        return Affine(k)
    v = _index_ref(ps)
    if ps.at_on_line("*"):
        ps.take()
        return Affine.of(v) * ps.parse_int()
    return Affine.of(v)


def _index_ref(ps) -> Value:
    tok = ps.peek()
    v = ps.parse_value_ref()
    if not is_index(v):
        raise ps.error(f"%{tok.text} is not a loop index (type {v.type})", tok)
    return v


def parse_affine(ps) -> Affine:
    """Read an affine loop-index expression written by ``format_affine``."""
    neg = ps.at_on_line("-")
    if neg:
        ps.take()
    a = _parse_term(ps)
    a = -a if neg else a
    while not ps.at_line_end():
        tok = ps.peek()
        if ps.at("+") or ps.at("-"):
            sign = 1 if ps.take().text == "+" else -1
            a = a + _parse_term(ps) * sign
        elif tok.kind == "int" and tok.text.startswith("-"):
            a = a + _parse_term(ps)
        else:
            break
    return a


def _parse_dim(ps) -> DimSlice:
    tok = ps.peek()
    if tok.kind == "ident" and tok.text in ("ds", "ts"):
        ps.take()
        ps.expect("(")
        start = parse_affine(ps)
        ps.expect(",")
        size = ps.parse_int()
        stride = 1
        if tok.text == "ds" and ps.accept(","):
            stride = ps.parse_int()
        ps.expect(")")
        try:
            return DimSlice(start * size, size) if tok.text == "ts" else DimSlice(start, size, stride)
        except BuildError as e:
            raise ps.error(str(e), tok) from None
    start = parse_affine(ps)
    if not ps.accept(":"):
        return DimSlice(start, 1)
    stop = parse_affine(ps)
    step = ps.parse_int() if ps.accept(":") else 1
    span = stop.minus(start)
    if span is None or step <= 0 or span <= 0:
        raise ps.error("slice bounds must differ by a positive constant and the step be positive", tok)
    return DimSlice(start, -(-span // step), step)


def parse_access(ps) -> Access:
    """Read ``%t`` or ``%t[dim, dim, ...]``."""
    tok = ps.peek()
    v = ps.parse_value_ref()
    shape = getattr(v.type, "shape", None)
    if shape is None:
        raise ps.error(f"%{tok.text} is not a tensor (type {v.type})", tok)
    if not ps.at_on_line("["):
        return Access.whole(v)
    ps.take()
    dims = [_parse_dim(ps)]
    while ps.accept(","):
        dims.append(_parse_dim(ps))
    ps.expect("]")
    if len(dims) != len(shape):
        raise ps.error(f"access of %{tok.text} has {len(dims)} dims but the tensor has {len(shape)}", tok)
    return Access(v, tuple(dims))
