"""Hand-written NKI kernels inside tensor graphs: ``tensor.custom_kernel``.

    y = b.custom_kernel(body, [x, w], reference=lambda x, w: ...)

``body`` is an NKI IR kernel (its text is the op's ``body`` attribute, so the op prints and
parses as one op); its HBM inputs, in order, take the op's operands and its outputs (all, or
those named by ``outputs``) are the op's results. The tensor interpreter runs ``reference`` (a
NumPy function of the operands returning the results, registered under the op's ``kernel``
name); the lowering inlines the body with the graph's buffers (transforms/lower/custom.py), so
the hardware verifier, the NKI interpreter and the emitted module see it like generated code.
This module stays in the tensor layer: it reads the body's shapes and dtypes through the
generic IR parser, and the hardware check of the body is installed by the package
(``set_body_verifier``), which may import the NKI dialect.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from ...ir.attrs import STR, Attr, TupleOf
from ...ir.errors import BuildError, NkError, VerifyError
from ...ir.graph import Graph
from ...ir.registry import table
from ..types import TensorType
from .base import TensorOp, tensor_types

CUSTOM_REFERENCES: dict[str, Callable] = table()
"""NumPy reference of each custom kernel, by kernel name (the tensor interpreter runs it)."""

_BODY_VERIFIER: list[Callable] = []


def set_body_verifier(fn: Callable) -> None:
    """Install the hardware verifier run on every custom kernel body (``nki.verify``)."""
    _BODY_VERIFIER[:] = [fn]


@lru_cache(maxsize=64)
def _parsed(text: str) -> Graph:
    from ...ir.parser import parse

    return parse(text)


def body_graph(kernel: str, text: str) -> Graph:
    """The body's NKI graph (parsed once per text; callers must not modify it)."""
    try:
        return _parsed(text)
    except NkError as e:
        raise BuildError(f"tensor.custom_kernel {kernel!r}: its body does not parse: {e}") from None


class CustomKernelOp(TensorOp):
    """A hand-written NKI kernel (``body``, NKI IR text) applied to the operands."""

    name = "tensor.custom_kernel"
    traits = frozenset()  # not Pure: never folded or merged with another call
    attr_spec = (Attr("kernel", STR), Attr("outputs", TupleOf(STR)), Attr("body", STR))
    numpy = "reference(*operands) (the NumPy function given with the kernel)"
    dtype_doc = "the body's output dtypes"
    builder_names = ("custom_kernel",)
    needs = None  # lowered by inlining its body

    @staticmethod
    def reference(kernel: str, *arrays):
        """The NumPy reference registered for ``kernel`` applied to ``arrays``."""
        fn = CUSTOM_REFERENCES.get(kernel)
        if fn is None:
            raise BuildError(
                f"tensor.custom_kernel {kernel!r}: no NumPy reference is registered under that name "
                "(give reference= to Builder.custom_kernel, or nk.register_custom_reference)"
            )
        return fn(*arrays)

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        kernel = attrs["kernel"]
        g = body_graph(kernel, attrs["body"])
        types = tensor_types(f"{cls.name} {kernel!r}", types)
        if len(types) != len(g.inputs):
            raise BuildError(
                f"tensor.custom_kernel {kernel!r}: the body takes {len(g.inputs)} inputs "
                f"({', '.join(g.input_names)}), got {len(types)} operands"
            )
        for name, v, t in zip(g.input_names, g.inputs, types):
            if tuple(v.type.shape) != t.shape or v.type.dtype is not t.dtype:
                raise BuildError(
                    f"tensor.custom_kernel {kernel!r}: input {name!r} of the body is "
                    f"{list(v.type.shape)} {v.type.dtype}, but the operand is {t}"
                )
        out = []
        for n in attrs["outputs"]:
            if n not in g.outputs:
                raise BuildError(
                    f"tensor.custom_kernel {kernel!r}: the body has no output {n!r} (it has "
                    f"{', '.join(g.outputs) or 'none'})"
                )
            t = g.outputs[n].type
            out.append(TensorType(tuple(t.shape), t.dtype))
        if not out:
            raise BuildError(f"tensor.custom_kernel {kernel!r}: no outputs")
        return out

    def verify(self) -> None:
        super().verify()
        kernel = self.attrs["kernel"]
        for check in _BODY_VERIFIER:
            try:
                check(body_graph(kernel, self.attrs["body"]))
            except VerifyError as e:
                msg = f"tensor.custom_kernel {kernel!r}: its body breaks a hardware rule: {e}"
                raise VerifyError(msg) from None

    def body(self) -> Graph:
        """The body's NKI graph (shared: do not modify)."""
        return body_graph(self.attrs["kernel"], self.attrs["body"])

    def run_reference(self, args) -> list:
        """The registered reference on ``args``: one array per result."""
        kernel = self.attrs["kernel"]
        got = self.reference(kernel, *args)
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        if len(got) != len(self.results):
            raise BuildError(
                f"tensor.custom_kernel {kernel!r}: the reference returned {len(got)} arrays for "
                f"{len(self.results)} outputs"
            )
        return got


def register_custom_reference(kernel: str, fn: Callable) -> None:
    """Register ``fn`` (NumPy arrays in, one array or a tuple out) as the reference of the custom
    kernel named ``kernel``."""
    if not isinstance(kernel, str) or not kernel:
        raise BuildError(f"custom kernel name must be a non-empty string, got {kernel!r}")
    if not callable(fn):
        raise BuildError(f"custom kernel {kernel!r}: reference must be a function, got {type(fn).__name__}")
    CUSTOM_REFERENCES[kernel] = fn
