"""Ordering ops (tensor.topk) the native lowering cannot take (transforms/lower/topk.py) expand
into the selection rounds of their ``expansion``."""

from __future__ import annotations

from ...tensor import ops as T
from ...tensor.composites_index import ArgmaxOp
from ..lower.topk import topk_refusal
from ..match import make
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


class ArgmaxToTopk(DecompositionPattern):
    """argmax(x, axis) → the index of topk(x, 1, axis) when the native topk lowering takes it
    (max8 / find_index8 read the axis once; the expansion reads it for a max, then again for
    the first index reaching it); the first maximum either way (ties to the lower index)"""

    root = ArgmaxOp
    benefit = 2  # before ExpandComposite

    def match_and_rewrite(self, op, rw):
        x = op.operand(0)
        if x.ndim == 0:
            return False
        axis = op.attrs["axis"] % x.ndim
        if topk_refusal(x.type, 1, axis, self.caps.target) is not None:
            return False
        top = rw.create(T.TopkOp, [x], {"k": 1, "axis": axis}, name_hint="argmax_topk")
        idx = top.results[1]
        if idx.type.shape != op.result.type.shape:  # keepdims=False: drop the axis
            idx = make(rw, T.ReshapeOp, [idx], {"shape": tuple(op.result.type.shape)})
        rw.replace_op(op, [idx])
        return True
