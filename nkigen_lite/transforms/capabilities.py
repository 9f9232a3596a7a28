"""Which tensor ops a target runs natively, derived from the target's published hardware facts.

A tensor op is native when the lowering can map it onto one instruction family: a ScalarE
activation function, a binary ALU operator, or an ALU reduction operator. What each op needs is
a fact on its class (``needs`` / ``capability()``, nkigen_lite/tensor/ops/). The function, ALU
and reduction lists are read from the target (``activation_functions``, ``alu_ops``,
``reduce_ops``) when it publishes them, otherwise from the NKI dialect's operator tables
(``nki/ops/alu.py``, facts §2.5); input domains come from ``target.activation_domain``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..nki.ops import alu
from ..nki.target import TRN2
from ..tensor import ops as T
from ..tensor.composites_index import ArgminOp, CumsumOp
from ..tensor.ops import Needs
from .lower.argmin import argmin_refusal
from .lower.cumsum import cumsum_refusal
from .lower.custom import own_lowering_takes
from .lower.topk import native_topk_refusal


@dataclass(frozen=True)
class Capabilities:
    """The instruction families of one target, as sets of names."""

    activation_functions: frozenset
    alu_ops: frozenset
    reduce_ops: frozenset
    target: object

    def has(self, needs: Needs | None) -> bool:
        """True when the target provides ``needs`` (None: nothing is needed)."""
        if needs is None:
            return True
        if needs.name is None:
            return False
        family = {"act": self.activation_functions, "alu": self.alu_ops, "reduce": self.reduce_ops}.get(
            needs.family
        )
        if family is None:
            raise ValueError(f"unknown capability family {needs.family!r} (act, alu, reduce)")
        return needs.name in family

    def native(self, op) -> bool:
        """True when the tensor op instance ``op`` runs natively (its ``capability()``), is a
        composite op with a lowering of its own that takes it (``register_composite_lowering``), or is a
        tensor.topk or tensor.argmin the top-8 lowering takes (transforms/lower/topk.py,
        argmin.py), or a tensor.cumsum the on-chip lowering takes (cumsum.py)."""
        if isinstance(op, ArgminOp):  # before the own-lowering check: refused ones expand
            return argmin_refusal(op, self.target) is None
        if isinstance(op, CumsumOp):  # floats along the last / first axis, on chip (lower/cumsum.py)
            return cumsum_refusal(op) is None
        if isinstance(op, T.CompositeOp) and own_lowering_takes(op):
            return True
        if isinstance(op, T.TopkOp):  # the top-8 instructions, when the native path takes it
            return native_topk_refusal(op, self.target) is None
        return self.has(op.capability())

    def has_unary(self, short: str) -> bool:
        """True when ``tensor.<short>`` maps onto one instruction."""
        return self.has(T.UNARY_OPS[short].needs)

    def has_binary(self, short: str) -> bool:
        """True when ``tensor.<short>`` maps onto one ALU operator."""
        return self.has(T.BINARY_OPS[short].needs)

    def has_reduce(self, kind: str) -> bool:
        """True when a keepdims ``tensor.reduce`` of ``kind`` maps onto one reduction."""
        return self.has(Needs("reduce", T.REDUCE_ALU.get(kind)))

    def domain(self, func: str) -> tuple[float, float] | None:
        """Input range an activation function is accurate on, or None when unrestricted."""
        fn = getattr(self.target, "activation_domain", None)
        return fn(func) if fn is not None else None


def capabilities(target=None) -> Capabilities:
    """The capabilities of ``target`` (default: trn2)."""
    t = TRN2 if target is None else target
    return Capabilities(
        frozenset(getattr(t, "activation_functions", alu.ACTIVATION_FUNCS)),
        frozenset(getattr(t, "alu_ops", alu.ALU_OPS)),
        frozenset(getattr(t, "reduce_ops", alu.REDUCE_OPS)),
        t,
    )
