"""Which tensor ops a target runs natively, derived from the target's published hardware facts.

A tensor op is native when the lowering can map it onto one instruction family: a ScalarE
activation function, a binary ALU operator, or an ALU reduction operator. The function, ALU
and reduction lists are read from the target (``activation_functions``, ``alu_ops``,
``reduce_ops``) when it publishes them, otherwise from the NKI dialect's operator tables
(``nki/ops/alu.py``, facts §2.5); input domains come from ``target.activation_domain``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..nki.ops import alu
from ..nki.target import TRN2

# tensor unary op -> what it needs: ("act", function) or ("alu", operator)
UNARY_NEEDS: dict[str, tuple[str, str]] = {
    **{f: ("act", f) for f in (
        "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "silu", "gelu",
        "softplus", "erf", "sin", "arctan", "relu", "abs", "sign", "square")},
    "neg": ("alu", "multiply"),             # x * -1
    "logical_not": ("alu", "logical_xor"),  # x xor true
    "bitwise_not": ("alu", "bitwise_xor"),  # x xor all-ones
    "cos": ("act", "cos"),
    "floor": ("act", "floor"),
    "ceil": ("act", "ceil"),
}

# tensor binary op -> ALU operator
BINARY_NEEDS: dict[str, str] = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "pow": "power",
    "maximum": "maximum", "minimum": "minimum", "floor_divide": "floor_divide", "mod": "mod",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "equal": "equal", "not_equal": "not_equal", "less": "less", "less_equal": "less_equal",
    "greater": "greater", "greater_equal": "greater_equal",
}

# tensor.reduce kind -> ALU reduction operator (mean / var / std have none)
REDUCE_NEEDS: dict[str, str] = {
    "sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
    "any": "logical_or", "all": "logical_and",
}


@dataclass(frozen=True)
class Capabilities:
    """The instruction families of one target, as sets of names."""

    activation_functions: frozenset
    alu_ops: frozenset
    reduce_ops: frozenset
    target: object

    def has_unary(self, short: str) -> bool:
        """True when ``tensor.<short>`` maps onto one instruction."""
        kind, name = UNARY_NEEDS[short]
        return name in (self.activation_functions if kind == "act" else self.alu_ops)

    def has_binary(self, short: str) -> bool:
        return BINARY_NEEDS[short] in self.alu_ops

    def has_reduce(self, kind: str) -> bool:
        need = REDUCE_NEEDS.get(kind)
        return need is not None and need in self.reduce_ops

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
