"""The ``canonicalize`` pass: rewrite rules to a fixed point, alternating with CSE."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.errors import BuildError
from ..ir.graph import Graph
from ..ir.passes import Pass, PassContext, RewriteCounts
from ..ir.rewrite import apply_patterns
from .canonical import PATTERNS
from .canonical.cse import cse

MAX_ROUNDS = 32


class CanonicalizeCounts(RewriteCounts):
    """Rule name -> how often it fired in the last ``canonicalize`` pass (CSE included)."""


def patterns_for(target=None) -> tuple:
    """The rules for ``target`` (default trn2): all but those creating an op (``produces``)
    that the target does not run natively."""
    from .capabilities import capabilities

    caps = capabilities(target)
    return tuple(p for p in PATTERNS if getattr(p, "produces", None) is None or caps.has(p.produces.needs))


def canonicalize(graph: Graph, target=None) -> dict[str, int]:
    """Canonicalize ``graph`` in place for ``target`` (default trn2); returns how often each
    rule fired (CSE included)."""
    patterns = patterns_for(target)
    counts: dict[str, int] = {}
    for _ in range(MAX_ROUNDS):
        for name, n in apply_patterns(graph, patterns).items():
            counts[name] = counts.get(name, 0) + n
        merged = cse(graph)
        if not merged:
            return counts
        counts["CSE"] = counts.get("CSE", 0) + merged
    raise BuildError(f"canonicalize did not reach a fixed point in {MAX_ROUNDS} rounds: {counts}")


@dataclass(frozen=True)
class Canonicalize(Pass):
    """Recompose primitive chains, fold identities and constants, simplify shape ops, CSE."""

    name = "canonicalize"

    def run(self, graph: Graph, ctx: PassContext) -> None:
        ctx.record(CanonicalizeCounts(canonicalize(graph, ctx.target)))
