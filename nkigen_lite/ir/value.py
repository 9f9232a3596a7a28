"""SSA values: identity-hashed, carrying a type, a printing hint and an ordered use-list."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .op import Op

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def sanitize_hint(name: str | None) -> str | None:
    """Return a printable identifier derived from ``name`` (or None when nothing usable)."""
    if not name:
        return None
    s = re.sub(r"[^A-Za-z0-9_]", "_", str(name))
    if not s or not (s[0].isalpha() or s[0] == "_"):
        s = "v" + s
    return s if _IDENT.match(s) else None


def _op_class() -> type:
    """The Op class (imported on first use: op.py imports this module)."""
    global _OP_CLASS
    if _OP_CLASS is None:
        from .op import Op

        _OP_CLASS = Op
    return _OP_CLASS


_OP_CLASS: type | None = None


class Use(NamedTuple):
    """One use of a value: operand number ``index`` of ``op``."""

    op: Op
    index: int


class Value:
    """An SSA value defined by an op result or a block argument.

    Values compare and hash by identity. ``name_hint`` only guides the printer. Operators
    (``+``, ``@``, ``x[...]``, ``.T``, ...) are forwarded to the builder that created the value,
    so a value built by ``nk.Builder`` behaves like a NumPy array under construction.
    """

    __slots__ = ("type", "name_hint", "owner", "index", "_uses", "_builder", "__weakref__")
    # NumPy scalars and arrays defer to our reflected operators (np.float32(2) * x, a @ x)
    __array_ufunc__ = None

    def __init__(self, type, owner=None, index: int = 0, name_hint: str | None = None):
        self.type = type
        self.owner = owner  # the defining Op, or the Block for block arguments
        self.index = index
        self.name_hint = sanitize_hint(name_hint)
        self._uses: dict[Use, None] = {}
        self._builder = None

    # ---- use-list -------------------------------------------------------------------------
    @property
    def uses(self) -> list[Use]:
        return list(self._uses)

    @property
    def num_uses(self) -> int:
        return len(self._uses)

    @property
    def has_uses(self) -> bool:
        return bool(self._uses)

    @property
    def users(self) -> list[Op]:
        """Ops using this value, each once, in first-use order."""
        return list(dict.fromkeys(u.op for u in self._uses))

    def _add_use(self, op: Op, index: int) -> None:
        self._uses[Use(op, index)] = None

    def _remove_use(self, op: Op, index: int) -> None:
        self._uses.pop(Use(op, index), None)

    def replace_all_uses_with(self, new: Value) -> None:
        """Make every user of this value use ``new`` instead."""
        if new is self:
            return
        for use in list(self._uses):
            use.op.set_operand(use.index, new)

    @property
    def defining_op(self) -> Op | None:
        owner = self.owner
        return owner if isinstance(owner, _op_class()) else None

    # ---- convenience for typed values ------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return len(self.type.shape)

    def __repr__(self) -> str:
        return f"<Value %{self.name_hint or '?'} : {self.type}>"

    __hash__ = object.__hash__

    # ---- operators forwarded to the creating builder --------------------------------------
    def _frontend(self, other: Any = None):
        b = self._builder
        if b is None and isinstance(other, Value):
            b = other._builder
        if b is None:
            raise TypeError(
                f"{self!r} was not created by a builder, so Python operators cannot add ops; "
                "use a Builder method instead"
            )
        return b

    def _binop(self, name: str, other: Any, reflected: bool = False):
        b = self._frontend(other)
        return b.value_operator(name, other, self) if reflected else b.value_operator(name, self, other)

    def __add__(self, o):
        return self._binop("add", o)

    def __radd__(self, o):
        return self._binop("add", o, True)

    def __sub__(self, o):
        return self._binop("sub", o)

    def __rsub__(self, o):
        return self._binop("sub", o, True)

    def __mul__(self, o):
        return self._binop("mul", o)

    def __rmul__(self, o):
        return self._binop("mul", o, True)

    def __truediv__(self, o):
        return self._binop("div", o)

    def __rtruediv__(self, o):
        return self._binop("div", o, True)

    def __floordiv__(self, o):
        return self._binop("floor_divide", o)

    def __rfloordiv__(self, o):
        return self._binop("floor_divide", o, True)

    def __mod__(self, o):
        return self._binop("mod", o)

    def __rmod__(self, o):
        return self._binop("mod", o, True)

    def __pow__(self, o):
        return self._binop("pow", o)

    def __rpow__(self, o):
        return self._binop("pow", o, True)

    def __matmul__(self, o):
        return self._binop("matmul", o)

    def __rmatmul__(self, o):
        return self._binop("matmul", o, True)

    def __and__(self, o):
        return self._binop("bitwise_and", o)

    def __rand__(self, o):
        return self._binop("bitwise_and", o, True)

    def __or__(self, o):
        return self._binop("bitwise_or", o)

    def __ror__(self, o):
        return self._binop("bitwise_or", o, True)

    def __xor__(self, o):
        return self._binop("bitwise_xor", o)

    def __rxor__(self, o):
        return self._binop("bitwise_xor", o, True)

    def __lt__(self, o):
        return self._binop("less", o)

    def __le__(self, o):
        return self._binop("less_equal", o)

    def __gt__(self, o):
        return self._binop("greater", o)

    def __ge__(self, o):
        return self._binop("greater_equal", o)

    def __eq__(self, o):
        if self._builder is None and not (isinstance(o, Value) and o._builder is not None):
            return self is o
        return self._binop("equal", o)

    def __ne__(self, o):
        if self._builder is None and not (isinstance(o, Value) and o._builder is not None):
            return self is not o
        return self._binop("not_equal", o)

    def __neg__(self):
        return self._frontend().value_operator("neg", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return self._frontend().value_operator("abs", self)

    def __invert__(self):
        return self._frontend().value_operator("invert", self)

    def __getitem__(self, key):
        return self._frontend().value_getitem(self, key)

    @property
    def T(self):
        return self._frontend().value_operator("T", self)

    def astype(self, dtype):
        return self._frontend().value_operator("astype", self, dtype)

    def reshape(self, *shape):
        return self._frontend().value_operator("reshape", self, shape)

    def __bool__(self):
        raise TypeError(
            "the truth value of an IR Value is unknown at build time; "
            "use Builder.where(...) for data-dependent choices"
        )

    def __iter__(self):
        raise TypeError("IR Values are not iterable; slice them with x[i] instead")

    def __len__(self):
        if not self.type.shape:
            raise TypeError("len() of a rank-0 Value")
        return self.type.shape[0]
