"""Op base class: operands, results, typed frozen attributes, regions and the op registry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from .attrs import Attr
from .edits import EDITS
from .errors import BuildError
from .registry import table
from .traits import ExplicitResultTypes, Pure, SideEffect, Terminator
from .value import Value

if TYPE_CHECKING:
    from .graph import Block, Region

OP_REGISTRY: dict[str, type[Op]] = table()


class Op:
    """One operation. Concrete subclasses set ``name`` (e.g. ``"tensor.exp"``), ``traits``,
    ``attr_spec``, and implement ``infer`` (result types from operand types and attributes).

    Ops are built through the generic constructor ``OpClass(operands, attrs, result_types,
    regions)``; builders add friendlier signatures on top. Subclasses never override
    ``__init__`` so that the parser and the rewriter can build any op the same way.
    """

    name: ClassVar[str] = ""
    traits: ClassVar[frozenset] = frozenset()
    attr_spec: ClassVar[tuple[Attr, ...]] = ()
    num_regions: ClassVar[int] = 0

    __slots__ = ("_operands", "results", "attrs", "regions", "parent", "_prev", "_next", "loc", "__weakref__")

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        name = cls.__dict__.get("name")
        if name:
            if name in OP_REGISTRY and OP_REGISTRY[name] is not cls:
                raise TypeError(f"op name {name!r} registered twice")
            OP_REGISTRY[name] = cls
        names = [a.name for a in cls.attr_spec]
        if len(set(names)) != len(names):
            raise TypeError(f"{cls.__name__}: duplicate attribute names {names}")

    def __init__(
        self,
        operands: Sequence[Value] = (),
        attrs: Mapping[str, Any] | None = None,
        result_types: Sequence[Any] | None = None,
        regions: Sequence[Region] | None = None,
    ):
        self.parent: Block | None = None
        self._prev = self._next = None
        self.loc: str | None = None  # source location (e.g. the tensor op an NKI op came from)
        self._operands: list[Value] = []
        self.attrs = MappingProxyType(self.check_attrs(attrs or {}))
        for v in operands:
            if not isinstance(v, Value):
                raise BuildError(f"{self.name}: operand {v!r} is not an IR Value")
        for i, v in enumerate(operands):
            self._operands.append(v)
            v._add_use(self, i)
        from .graph import Region

        self.regions: list[Region] = (
            list(regions) if regions is not None else [Region() for _ in range(self.num_regions)]
        )
        if len(self.regions) != self.num_regions:
            raise BuildError(f"{self.name}: expected {self.num_regions} regions, got {len(self.regions)}")
        for r in self.regions:
            r.parent = self
        if result_types is None:
            if self.has_trait(ExplicitResultTypes):
                raise BuildError(f"{self.name}: result types must be given explicitly")
            result_types = self.infer([v.type for v in operands], self.attrs)
        self.results: list[Value] = [Value(t, self, i) for i, t in enumerate(result_types)]

    # ---- attributes -------------------------------------------------------------------------
    @classmethod
    def check_attrs(cls, attrs: Mapping[str, Any]) -> dict[str, Any]:
        """Convert and validate attributes against ``attr_spec``; fill in defaults."""
        known = {a.name: a for a in cls.attr_spec}
        for k in attrs:
            if k not in known:
                raise BuildError(f"{cls.name}: unknown attribute {k!r} (known: {', '.join(known) or 'none'})")
        out = {}
        for a in cls.attr_spec:
            if a.name in attrs:
                try:
                    out[a.name] = a.kind.convert(attrs[a.name])
                except BuildError as e:
                    raise BuildError(f"{cls.name}: attribute {a.name!r}: {e}") from None
            elif a.required:
                raise BuildError(f"{cls.name}: missing required attribute {a.name!r}")
            else:
                out[a.name] = a.default
        return out

    # ---- type inference and verification ---------------------------------------------------
    @classmethod
    def infer(cls, operand_types: list, attrs: Mapping[str, Any]) -> list:
        """Result types for these operand types and attributes; raises BuildError if illegal."""
        raise NotImplementedError(f"{cls.name} does not implement infer")

    def verify(self) -> None:
        """Check this op's own invariants; raise BuildError naming the broken rule."""
        if self.has_trait(ExplicitResultTypes):
            return
        expected = self.infer([v.type for v in self._operands], self.attrs)
        actual = [r.type for r in self.results]
        if list(expected) != actual:
            exp = ", ".join(map(str, expected))
            act = ", ".join(map(str, actual))
            raise BuildError(f"{self.name}: result type is {act} but the operands give {exp}")

    # ---- operands and results ---------------------------------------------------------------
    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    @property
    def num_operands(self) -> int:
        return len(self._operands)

    def operand(self, i: int) -> Value:
        return self._operands[i]

    def set_operand(self, i: int, v: Value) -> None:
        EDITS.n += 1
        old = self._operands[i]
        old._remove_use(self, i)
        self._operands[i] = v
        v._add_use(self, i)

    def drop_operand_uses(self) -> None:
        """Remove this op (and every op nested in it) from the use-lists of its operands."""
        for i, v in enumerate(self._operands):
            v._remove_use(self, i)
        for r in self.regions:
            for b in r.blocks:
                for op in b:
                    op.drop_operand_uses()

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    # ---- traits -----------------------------------------------------------------------------
    @classmethod
    def has_trait(cls, trait: type) -> bool:
        return trait in cls.traits

    @property
    def is_pure(self) -> bool:
        return Pure in self.traits and SideEffect not in self.traits

    @property
    def is_terminator(self) -> bool:
        return Terminator in self.traits

    # ---- structure ---------------------------------------------------------------------------
    @property
    def next_op(self) -> Op | None:
        return self._next

    @property
    def prev_op(self) -> Op | None:
        return self._prev

    @property
    def parent_op(self) -> Op | None:
        """The op whose region holds this op (None at graph top level or when detached)."""
        if self.parent is None or self.parent.parent is None:
            return None
        owner = self.parent.parent.parent
        return owner if isinstance(owner, Op) else None

    def walk(self):
        """This op, then every op nested in its regions, in pre-order."""
        yield self
        for r in self.regions:
            for b in r.blocks:
                for op in b:
                    yield from op.walk()

    def erase(self) -> None:
        """Detach this op from its block and drop its operand uses; results must be unused."""
        for r in self.results:
            if r.has_uses:
                users = ", ".join(u.op.name for u in r.uses)
                raise BuildError(f"cannot erase {self.name}: result {r.index} still used by {users}")
        self.drop_operand_uses()
        if self.parent is not None:
            self.parent.remove(self)

    def format_body(self, p) -> str:
        """Text between the op name and ``: types``; override for a custom syntax."""
        parts = [", ".join(p.name(v) for v in self._operands)]
        parts.append(p.format_attrs(self))
        return " ".join(x for x in parts if x)

    @classmethod
    def parse_body(cls, ps) -> tuple[list[Value], dict[str, Any]]:
        """Read what ``format_body`` printed; returns (operands, raw attributes)."""
        return ps.parse_generic_body()

    def __repr__(self) -> str:
        from .printer import format_op

        try:
            return f"<Op {format_op(self)}>"
        except Exception:  # noqa: BLE001 - repr must never fail
            return f"<Op {self.name}>"
