"""NkiOp: the base of NKI dialect ops, whose operands are tensor accesses and loop indices.

Access-valued attributes (kind ``ACCESS``, or ``ACCESS_OR_SCALAR`` for operands that may be an
immediate) and loop-index expressions (kind ``AFFINE``) refer to operands by position; see
``nki/access.py``. Text: required accesses are positional, everything else goes in braces::

    nki.tensor_scalar %y[0:128, 0:512], %x[0:128, 0:512] {op0 = multiply, operand0 = 2.0, engine = vector}
"""

from __future__ import annotations

from typing import ClassVar

from ...ir.attrs import Attr, EnumAttr
from ...ir.errors import BuildError
from ...ir.op import Op
from ...ir.traits import SideEffect
from ..access import (
    ACCESS,
    ACCESS_KINDS,
    AFFINE,
    AccessSpec,
    AffineSpec,
    format_access,
    format_affine,
    pack,
    parse_access,
    parse_affine,
    positions,
    unpack_access,
    unpack_affine,
)
from ..types import Access, Affine, HbmType, IndexType, TileType

ENGINES = ("tensor", "vector", "scalar", "gpsimd")
ENGINE_ATTR = Attr("engine", EnumAttr(*ENGINES))


class NkiOp(Op):
    """Base of NKI ops: accesses and loop-index expressions stored by operand position."""

    traits = frozenset({SideEffect})
    writes: ClassVar[tuple[str, ...]] = ()  # access attributes this op writes
    engines: ClassVar[tuple[str, ...]] = ()  # engines that may run it (first = default)

    @classmethod
    def infer(cls, _operand_types, _attrs):
        return []

    # ---- access views -----------------------------------------------------------------------
    def access(self, name: str) -> Access | None:
        """The Access stored in attribute ``name`` (None when absent or an immediate).

        A new Access each call (Accesses compare by identity); its dims are unpacked once per
        (spec, operands) and reused while neither changes (DimSlice and Affine are immutable
        values), since passes ask for the same accesses many times."""
        spec = self.attrs[name]
        if not isinstance(spec, AccessSpec):
            return None
        key = tuple(map(id, self._operands))  # the cached Access keeps the Values it uses alive
        memo = self.__dict__.setdefault("_unpacked", {})
        hit = memo.get(name)
        if hit is None or hit[0] is not spec or hit[1] != key:
            hit = memo[name] = (spec, key, unpack_access(spec, self._operands))
        acc = hit[2]
        return Access(acc.tensor, acc.dims)

    def tensors(self, names=None) -> list:
        """The tensor Values of this op's accesses (those in ``names`` when given), in
        declaration order, without unpacking the accesses."""
        ops, attrs = self._operands, self.attrs
        return [
            ops[spec.tensor]
            for a in self.attr_spec
            if (names is None or a.name in names) and isinstance(spec := attrs[a.name], AccessSpec)
        ]

    def affine(self, name: str) -> Affine:
        return unpack_affine(self.attrs[name], self._operands)

    def access_attrs(self) -> list[tuple[str, AccessSpec]]:
        """(name, spec) of every access this op holds, in declaration order."""
        return [
            (a.name, self.attrs[a.name]) for a in self.attr_spec if isinstance(self.attrs[a.name], AccessSpec)
        ]

    @property
    def engine(self) -> str | None:
        return self.attrs.get("engine")

    # ---- structural verification ---------------------------------------------------------
    def verify(self) -> None:
        used = set()
        n = len(self._operands)
        for a in self.attr_spec:
            spec = self.attrs[a.name]
            if isinstance(spec, (AccessSpec, AffineSpec)):
                for p in positions(spec):
                    if not 0 <= p < n:
                        raise BuildError(f"{self.name}: {a.name} refers to operand {p} of {n}")
                    used.add(p)
                for p, _ in (
                    spec.terms
                    if isinstance(spec, AffineSpec)
                    else [t for d in spec.dims for t in d.offset.terms]
                ):
                    if not isinstance(self._operands[p].type, IndexType):
                        raise BuildError(
                            f"{self.name}: {a.name} offsets use operand {p}, which is not a loop index"
                        )
            if isinstance(spec, AccessSpec):
                t = self._operands[spec.tensor].type
                if not isinstance(t, (TileType, HbmType)):
                    raise BuildError(
                        f"{self.name}: {a.name} accesses a value of type {t}, not a tile or HBM tensor"
                    )
                if len(spec.dims) != len(t.shape):
                    raise BuildError(
                        f"{self.name}: {a.name} has {len(spec.dims)} dims but {t} has {len(t.shape)}"
                    )
                for d in spec.dims:
                    if d.size <= 0 or d.stride < 0:
                        raise BuildError(
                            f"{self.name}: {a.name} has a slice of size {d.size}, stride {d.stride}"
                        )
        if len(used) != n:
            raise BuildError(
                f"{self.name}: operands {sorted(set(range(n)) - used)} are not referenced by any access"
            )
        if self.results:
            raise BuildError(f"{self.name} has no results")

    # ---- text ----------------------------------------------------------------------------------
    def format_body(self, p) -> str:
        ops = self._operands

        def name(pos):
            return p.name(ops[pos])

        def access(spec):
            return format_access(spec, name, ops[spec.tensor].type.shape)

        positional, keyed = [], []
        for a in self.attr_spec:
            v = self.attrs[a.name]
            if a.kind is ACCESS and a.required:
                positional.append(access(v))
                continue
            if not a.required and type(v) is type(a.default) and v == a.default:
                continue
            if isinstance(v, AccessSpec):
                text = access(v)
            elif isinstance(v, AffineSpec):
                text = format_affine(v, name)
            else:
                text = a.kind.format(v)
            keyed.append(f"{a.name} = {text}")
        body = ", ".join(positional)
        if keyed:
            body += (" " if body else "") + "{" + ", ".join(keyed) + "}"
        return body

    @classmethod
    def parse_body(cls, ps):
        kinds = {a.name: a.kind for a in cls.attr_spec}
        order = {a.name: i for i, a in enumerate(cls.attr_spec)}
        items: dict[str, object] = {}
        for i, a in enumerate(x for x in cls.attr_spec if x.kind is ACCESS and x.required):
            if i:
                ps.expect(",")
            items[a.name] = parse_access(ps)
        if ps.at_on_line("{"):
            ps.take()
            if not ps.at("}"):
                while True:
                    tok = ps.peek()
                    key = ps.expect_ident()
                    if key in items:
                        raise ps.error(f"attribute {key!r} given twice", tok)
                    ps.expect("=")
                    kind = kinds.get(key)
                    if kind in ACCESS_KINDS and ps.peek().kind == "value":
                        items[key] = parse_access(ps)
                    elif kind is AFFINE:
                        items[key] = parse_affine(ps)
                    else:
                        items[key] = ps.parse_attr_value()
                    if not ps.accept(","):
                        break
            ps.expect("}")
        ordered = sorted(items.items(), key=lambda kv: order.get(kv[0], len(order)))
        return pack(ordered)
