"""Composite ops (``nk.define_op``) expand into their definitions before lowering."""

from __future__ import annotations

from ...tensor import ops as T
from .base import DecompositionPattern


class ExpandComposite(DecompositionPattern):
    """composite(x, ...) → the ops of its expansion (the defining function traced on x's type),
    inlined in place with the op's operands as the expansion's inputs"""

    root = T.CompositeOp

    def match_and_rewrite(self, op, rw):
        if self.caps.native(op):
            return False
        rw.replace_op(op, inline_expansion(op, rw, ("y",)))
        return True


def inline_expansion(op, rw, outputs: tuple[str, ...]) -> list:
    """Create the ops of ``op``'s expansion (its defining graph traced on the operands' types)
    before ``op``, with the operands as the expansion's inputs; the new values of the named
    ``outputs``, in order."""
    g = op.expansion([v.type for v in op.operands], op.attrs)
    env = dict(zip(g.inputs, op.operands))
    for inner in g.body:
        if inner is g.return_op:
            continue
        new = rw.create(
            type(inner),
            [env[v] for v in inner.operands],
            dict(inner.attrs),
            [r.type for r in inner.results],
            name_hint=inner.results[0].name_hint if inner.results else None,
        )
        env.update(zip(inner.results, new.results))
    return [env[g.outputs[name]] for name in outputs]
