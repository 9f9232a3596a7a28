"""Ordering ops (tensor.topk) the native lowering cannot take (transforms/lower/topk.py) expand
into the selection rounds of their ``expansion``."""

from __future__ import annotations

from ...tensor import ops as T
from .base import DecompositionPattern
from .composite import inline_expansion


class ExpandTopk(DecompositionPattern):
    """topk(x, k, axis) → k rounds of max / lowest index reaching it / mask it out (the op's
    expansion), inlined with x as the expansion's input"""

    root = T.TopkOp

    def match_and_rewrite(self, op, rw):
        if self.caps.native(op):  # max8 / find_index8 / match_replace8 (lower/topk.py)
            return False
        rw.replace_op(op, inline_expansion(op, rw, ("values", "indices")))
        return True
