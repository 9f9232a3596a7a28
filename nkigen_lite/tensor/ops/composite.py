"""Composite tensor ops: an op defined by a NumPy function of existing ops (``nk.define_op``).

    def softmax(x, axis=-1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    SoftmaxOp = nk.define_op("softmax", softmax, doc="exp(x - max) / sum(exp(x - max)).")

The function's positional parameters without a default are the op's operands (tensors); its
parameters with a default are the op's attributes (int, float, bool or str, of the default's
type). It must return one array. The op is one ``tensor.<name>`` op in the IR (it prints and
parses as one op); its result type, its value in the tensor interpreter and its decomposition
all come from the **expansion**: the function traced (``nk.trace``) on the operands' types.
The decompose pass inlines the expansion (composites are never native: ``needs`` is
``composite:-``), so every backend runs them with no further work. ``reference`` is the
function itself on NumPy arrays.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import ClassVar

from ...ir.attrs import BOOL, FLOAT, INT, STR, Attr
from ...ir.errors import BuildError, NkError
from ...ir.graph import Graph
from ...ir.registry import table
from ...ir.traits import Pure
from .base import TENSOR_OPS, Needs, TensorOp, tensor_types

COMPOSITE_OPS: dict[str, type[CompositeOp]] = table()
"""Composite op classes by short name (``softmax``), in definition order."""

_KINDS = {bool: BOOL, int: INT, float: FLOAT, str: STR}
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


class CompositeOp(TensorOp):
    """Base of composite ops (see the module docstring)."""

    traits = frozenset({Pure})
    definition: ClassVar[Callable | None] = None
    operand_names: ClassVar[tuple[str, ...]] = ()
    needs = Needs("composite", None)
    dtype_doc = "the expansion's (the defining function traced on the operand types)"

    __slots__ = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("name"):
            COMPOSITE_OPS[cls.short_name()] = cls

    @classmethod
    def expansion(cls, types, attrs) -> Graph:
        """The definition traced on operand ``types`` with ``attrs``: a graph whose inputs are
        the operands (named after the parameters) and whose one output is ``y``."""
        from ..trace import TracedFunction

        types = tensor_types(cls.name, types, len(cls.operand_names))
        kwargs = {a.name: attrs[a.name] for a in cls.attr_spec}
        fn = TracedFunction(cls.definition, name=cls.short_name(), static_argnames=tuple(kwargs))
        try:
            g = fn.trace(*types, **kwargs)
        except NkError as e:
            raise BuildError(
                f"{cls.name}: expanding for operands {', '.join(str(t) for t in types)}: {e}"
            ) from None
        if list(g.outputs) != ["y"]:
            raise BuildError(
                f"{cls.name}: the definition must return one array, got outputs {list(g.outputs)}"
            )
        return g

    @classmethod
    def infer(cls, types, attrs):
        return [cls.expansion(types, attrs).outputs["y"].type]


def define_op(
    name: str,
    fn: Callable,
    *,
    doc: str | None = None,
    numpy: str | None = None,
    dtype_doc: str | None = None,
    native: tuple | None = None,
) -> type[CompositeOp]:
    """Register ``tensor.<name>`` as a composite op defined by the NumPy function ``fn`` (see
    the module docstring); returns the new op class. ``doc``: its one-line doc (default: the
    first line of ``fn``'s docstring); ``numpy``: its semantics in words. ``native``: ``(base,
    needs, facts)`` for an op that is also an op of class ``base`` (e.g. ``UnaryOp``) running
    natively when the target provides ``needs`` (a ``Needs``): ``base`` comes first in the
    bases, so its interpreter, layout and lowering rules apply, and decompose expands the op
    only on a target without ``needs`` (``activations.py``); ``facts``: more class facts."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise BuildError(f"define_op: name {name!r} must be lower_case_with_underscores")
    if f"tensor.{name}" in TENSOR_OPS:
        raise BuildError(f"define_op: tensor.{name} is already defined")
    if not callable(fn):
        raise BuildError(f"define_op({name}): fn must be a function, got {type(fn).__name__}")
    operands, attrs = [], []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise BuildError(
                f"define_op({name}): parameter {p.name!r} is {p.kind.description}; "
                "operands are positional parameters, attributes have defaults"
            )
        if p.default is p.empty:
            if attrs:
                raise BuildError(f"define_op({name}): operand {p.name!r} follows an attribute")
            operands.append(p.name)
        else:
            kind = _KINDS.get(type(p.default))
            if kind is None:
                raise BuildError(
                    f"define_op({name}): attribute {p.name!r} has a default of type "
                    f"{type(p.default).__name__}; use int, float, bool or str"
                )
            attrs.append(Attr(p.name, kind, p.default))
    if not operands:
        raise BuildError(f"define_op({name}): fn needs at least one operand (a parameter without a default)")
    summary = doc or (inspect.getdoc(fn) or "").strip().splitlines()[0:1]
    summary = summary if isinstance(summary, str) else (summary[0] if summary else "")
    if not summary:
        raise BuildError(f"define_op({name}): give doc= or a docstring on fn")
    cls_name = "".join(p.capitalize() for p in name.split("_")) + "Op"
    body = {
        "name": f"tensor.{name}",
        "__doc__": summary,
        "__slots__": (),
        "__module__": getattr(fn, "__module__", __name__),
        "attr_spec": tuple(attrs),
        "operand_names": tuple(operands),
        "definition": staticmethod(fn),
        "reference": staticmethod(fn),
        "numpy": numpy or f"{getattr(fn, '__qualname__', name)}(...) (a NumPy function)",
        "builder_names": (name,),
    }
    if dtype_doc:
        body["dtype_doc"] = dtype_doc
    bases: tuple[type, ...] = (CompositeOp,)
    if native is not None:
        base, needs, facts = native
        if not isinstance(needs, Needs):
            raise BuildError(f"define_op({name}): native needs a Needs, got {needs!r}")
        bases = (base, CompositeOp)
        body["needs"] = needs
        body["traits"] = base.traits
        body.update(facts)
    return type(cls_name, bases, body)
