"""Ordering ops (tensor.topk) expand into the selection rounds of their ``expansion``."""

from __future__ import annotations

from ...tensor import ops as T
from .base import DecompositionPattern


class ExpandTopk(DecompositionPattern):
    """topk(x, k, axis) → k rounds of max / lowest index reaching it / mask it out (the op's
    expansion), inlined with x as the expansion's input"""

    root = T.TopkOp

    def match_and_rewrite(self, op, rw):
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
        rw.replace_op(op, [env[g.outputs["values"]], env[g.outputs["indices"]]])
        return True
