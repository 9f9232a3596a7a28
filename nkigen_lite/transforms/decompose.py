"""The ``decompose`` pass: lower the tensor ops the target lacks into ops it has."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.errors import BuildError
from ..ir.graph import Graph
from ..ir.passes import Pass, PassContext, RewriteCounts
from ..ir.printer import format_op
from ..ir.rewrite import apply_patterns
from ..tensor import ops as T
from .canonical.cse import cse
from .canonical.folding import FOLDING_PATTERNS
from .capabilities import Capabilities, capabilities
from .decomposition import patterns


class DecomposeCounts(RewriteCounts):
    """Decomposition name -> how often it fired in the ``decompose`` pass (CSE included)."""


def unsupported(op, caps: Capabilities) -> bool:
    """True when ``op`` is a tensor op whose ``capability()`` the target lacks."""
    return isinstance(op, T.TensorOp) and not caps.native(op)


def decompose(graph: Graph, target=None) -> dict[str, int]:
    """Decompose ``graph`` in place for ``target`` (default trn2); returns how often each
    decomposition fired. Constants the decompositions create are folded and deduplicated
    (the constant-folding rules of canonicalize, then CSE). Raises BuildError naming an op
    that is left without a lowering."""
    caps = capabilities(target)
    fired = apply_patterns(graph, [*FOLDING_PATTERNS, *patterns(caps)])
    merged = cse(graph)
    if merged:
        fired["CSE"] = merged
    for op in graph.walk():
        if unsupported(op, caps):
            name = getattr(caps.target, "name", "the target")
            raise BuildError(
                f"decompose: {op.name} is not native on {name} (it needs {op.capability()}) "
                f"and no decomposition rewrote it for these operands (a decomposition belongs "
                f"in nkigen_lite/transforms/decomposition/):\n  {format_op(op)}"
            )
    return fired


@dataclass(frozen=True)
class Decompose(Pass):
    """Rewrite ops the target lacks (div, mean, var, floor_divide, cos, ...) into ops it has."""

    name = "decompose"

    def run(self, graph: Graph, ctx: PassContext) -> None:
        ctx.record(DecomposeCounts(decompose(graph, ctx.target)))
