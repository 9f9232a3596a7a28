"""The softmax scale moves into the exponent, where the activation's scale operand absorbs it.

``exp(x*c - max(x*c))`` with c a positive finite f32 splat becomes ``exp(x*c + max(x)*(-c))``:
the max of a positively scaled row is the scaled max (rounding is monotone, so this is exact),
so the scaled scores are never written; lowering folds ``x*c + bias`` into one
``activation(exp, scale=c, bias)`` and the bias is a per-row column. ``x / c`` is matched only
when 1/c is exact (c a power of two, e.g. √64): otherwise ``x / c`` and ``x * (1/c)`` differ by
a rounding and canonicalize keeps values exact, so ``x / √128`` is not folded.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ..match import def_op, full, make, replace, splat_value


def _scaled(v):
    """(x, r) when ``v`` is x / c or x * c (c positive finite splat), with x * r its value."""
    op = def_op(v, (T.DivOp, T.MulOp))
    if op is None or v.dtype.name != "f32":
        return None
    x, c = op.operands
    k = splat_value(c)
    if isinstance(op, T.MulOp) and splat_value(x) is not None:
        x, k = c, splat_value(x)
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k <= 0:
        return None
    if x.type != v.type:
        return None
    if isinstance(op, T.MulOp):
        return x, float(k)
    r = float(np.float32(1.0 / float(k)))
    return (x, r) if r * float(k) == 1.0 else None  # x / c == x * (1/c) only for c a power of 2


class SoftmaxScaleIntoExp(RewritePattern):
    """exp(x*c - max(x*c)) → exp(x*c + max(x)*(-c))   (c > 0: max commutes with the scale)"""

    root = T.ExpOp

    def match_and_rewrite(self, op, rw):
        sub = def_op(op.operand(0), T.SubOp)
        if sub is None or sub.result.num_uses != 1:
            return False
        s, m = sub.operands
        red = def_op(m, T.ReduceOp)
        if red is None or red.attrs["kind"] != "max" or red.operand(0) is not s or m.num_uses != 1:
            return False
        if s.num_uses != 2:
            return False  # the scaled scores are used elsewhere: they are written anyway
        found = _scaled(s)
        if found is None:
            return False
        x, r = found
        dt = s.dtype
        scaled = make(rw, T.MulOp, [x, full(rw, r, dt)])
        mx = make(rw, T.ReduceOp, [x], dict(red.attrs))
        bias = make(rw, T.MulOp, [mx, full(rw, -r, dt)])
        arg = make(rw, T.AddOp, [scaled, bias])
        return replace(rw, op, make(rw, T.ExpOp, [arg]))


SOFTMAX_SCALE_PATTERNS = (SoftmaxScaleIntoExp(),)
