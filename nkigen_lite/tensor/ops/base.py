"""Base of tensor dialect ops: the facts every op class carries, and the tensor op registries.

Every fact about one tensor op lives on its class (see docs/adding_an_op.md):

- ``name`` and the docstring (its first line is the op's one-line doc, ``summary()``);
- ``reference``: the NumPy function that defines its values (the tensor interpreter and the
  tests call it; elementwise ops take arrays, the others also take the op's attributes);
- ``numpy``: the NumPy semantics in words for the docs (``"np.exp"``, ``"1 / (1 + exp(-x))"``);
- dtype rules: ``infer`` (with ``float_only`` / ``category`` for elementwise ops) and
  ``dtype_doc``, the rule in words;
- ``traced_from``: NumPy ufuncs that ``@nk.trace`` maps straight onto the op;
- ``builder_names``: the ``nk.Builder`` methods that build the op (the first is the main one;
  elementwise ops get these methods generated, the others define them in the Builder);
- ``needs``: the target capability the op needs to run natively (``Needs``), or None when the
  lowering handles it structurally; ``capability()`` may refine it per instance;
- ``examples``: a few exact (arguments, result) pairs of elementwise ops, checked against the
  reference and the interpreter by the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from ...ir.errors import BuildError
from ...ir.op import Op
from ...ir.registry import table
from ..types import TensorType

TENSOR_OPS: dict[str, type[TensorOp]] = table()
"""Every tensor op class by full name (``tensor.exp``), in definition order."""


@dataclass(frozen=True)
class Needs:
    """A target capability: ``family`` is ``"act"`` (a ScalarE activation function), ``"alu"``
    (a binary ALU operator), ``"reduce"`` (an ALU reduction operator), ``"composite"`` (a
    composite op, ``nk.define_op``: always expanded by decompose), ``"ordering"`` (tensor.topk:
    lowered onto the top-8 instructions when transforms/lower/topk.py takes the instance,
    otherwise expanded by decompose) or
    ``"indexed"`` (an indexed op that decompose rewrites onto gather_rows / scatter_rows);
    ``name`` is the
    operator's NKI name, or None when no instruction computes the op (it must be decomposed)."""

    family: str
    name: str | None

    def __str__(self) -> str:
        return f"{self.family}:{self.name or '-'}"


def tensor_types(name: str, types, n: int | None = None) -> list[TensorType]:
    """Check that ``types`` are ``n`` tensor types (any number when n is None)."""
    if n is not None and len(types) != n:
        raise BuildError(f"{name}: expected {n} operands, got {len(types)}")
    for i, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise BuildError(f"{name}: operand {i} must be a tensor, got {t}")
    return list(types)


class TensorOp(Op):
    """Base of tensor dialect ops."""

    reference: ClassVar[Callable | None] = None
    numpy: ClassVar[str] = ""
    dtype_doc: ClassVar[str] = ""
    traced_from: ClassVar[tuple] = ()
    builder_names: ClassVar[tuple[str, ...]] = ()
    needs: ClassVar[Needs | None] = None
    examples: ClassVar[tuple[tuple[tuple, object], ...]] = ()

    __slots__ = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("name"):
            TENSOR_OPS[cls.name] = cls

    @classmethod
    def short_name(cls) -> str:
        """The name without the dialect prefix (``exp`` for ``tensor.exp``)."""
        return cls.name.split(".", 1)[1]

    @classmethod
    def summary(cls) -> str:
        """The one-line doc: the first line of the class docstring."""
        return (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""

    def capability(self) -> Needs | None:
        """What this instance needs from the target to run natively (default: ``needs``)."""
        return self.needs


def elementwise_class(base: type, short: str, doc: str, **facts) -> type:
    """Define ``tensor.<short>`` as a subclass of ``base`` carrying ``facts`` (class attributes;
    callables become static methods)."""
    cls_name = "".join(p.capitalize() for p in short.split("_")) + "Op"
    body = {
        "name": f"tensor.{short}",
        "__doc__": doc,
        "__slots__": (),
        "__module__": base.__module__,
        "builder_names": (short, *facts.pop("aliases", ())),
    }
    for k, v in facts.items():
        body[k] = staticmethod(v) if callable(v) and not isinstance(v, type) else v
    return type(cls_name, (base,), body)
