"""Leaky ReLU written as a select becomes a maximum (or a minimum): no predicate is computed.

``where(x > 0, x, a·x)`` with ``a`` a constant splat, ``0 < a < 1``, is ``maximum(x, a·x)``; with
``a > 1`` (finite) it is ``minimum(x, a·x)``. The comparison may be ``x > 0``, ``x >= 0``,
``0 < x``, ``0 <= x`` (then the select keeps ``x``) or ``x < 0``, ``x <= 0``, ``0 > x``, ``0 >= x``
(then it keeps ``a·x``), the product ``a·x`` or ``x·a``, its result of x's float dtype. The
select lowered a predicate tile, two predicated copies and an add (2.34x the roofline at
2048x4096 f32); the maximum is one VectorE / GpSimd pass beside the ScalarE product.

Proof that the values are equal, bit for bit, for every x of the dtype (write ``m = fl(a·x)``,
the product rounded to the dtype; the only facts used are that rounding is monotone —
``u <= v`` implies ``fl(u) <= fl(v)`` — and leaves representable values alone, which hold
for round-to-nearest, for directed rounding and for a product computed wider and rounded again;
``a`` is the multiplier as stored, checked in (0, 1) (or above 1) in f64, f32 and x's dtype):

- ``x > 0`` finite, ``0 < a < 1``: exactly ``a·x < x``, so ``m <= fl(x) = x`` and
  ``maximum(x, m) = x``, what the select keeps (``m = x`` gives the same value). Underflow to
  +0 or a subnormal keeps ``m <= x``.
- ``x < 0`` finite: exactly ``a·x > x``, so ``m >= x`` and ``maximum(x, m) = m``. When ``m = x``
  both are the same value; underflow gives ``m = -0.0`` (or a negative subnormal), still ``>= x``,
  and the select keeps that same ``m``.
- ``x = +inf``: ``m = +inf = x``; ``x = -inf``: ``m = -inf = x`` (no ``0·inf``: ``a != 0``).
- ``x = +0``: the select keeps ``a·(+0) = +0``, and ``maximum(+0, +0) = +0``; ``x = -0``:
  ``m = -0`` and ``maximum(-0, -0) = -0`` (with ``>=`` the select keeps ``x = -0``: the same).
  Signed zeros never meet an opposite sign, so no max-of-zeros convention matters.
- ``x = NaN``: every comparison is false, the select keeps ``m = NaN``; ``maximum(NaN, NaN)``
  is NaN under any NaN rule of the engines (both operands are NaN).
- ``a > 1``: the same with the inequalities reversed (``a·x > x`` for ``x > 0``, overflow to
  ``+inf`` included, so ``minimum(x, m) = x``; ``m <= x`` for ``x < 0``, ``minimum = m``).

``a = 0`` is excluded (``0·inf = NaN`` where the select keeps ``±inf``), as are negative,
non-finite and unit multipliers.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ..match import def_op, make, replace, splat_value

# comparison class -> (x on the left: select keeps x when true?, x on the right: ...)
_KEEPS_X = {
    T.GreaterOp: (True, False),
    T.GreaterEqualOp: (True, False),
    T.LessOp: (False, True),
    T.LessEqualOp: (False, True),
}


def _compared_to_zero(cond):
    """(x, keeps_x) when ``cond`` compares some x with a zero splat: keeps_x says whether the
    comparison is true for positive x."""
    op = def_op(cond, tuple(_KEEPS_X))
    if op is None:
        return None
    left, right = op.operands
    for x, zero, side in ((left, right, 0), (right, left, 1)):
        z = splat_value(zero)
        if z is not None and not isinstance(z, bool) and z == 0:
            return x, _KEEPS_X[type(op)][side]
    return None


def _multiplier(m, x):
    """``a`` when ``m`` is ``a·x`` or ``x·a`` with a splat ``a`` (else None)."""
    op = def_op(m, T.MulOp)
    if op is None:
        return None
    p, q = op.operands
    for y, c in ((p, q), (q, p)):
        if y is x:
            a = splat_value(c)
            if a is not None and not isinstance(a, bool):
                return float(a)
    return None


def _side(a: float, dtype) -> type | None:
    """MaximumOp for ``0 < a < 1``, MinimumOp for finite ``a > 1``, as stored in f64, f32 and
    ``dtype`` (None otherwise)."""
    vals = [float(np.asarray(a, dtype=d)) for d in (np.float64, np.float32, dtype.np_dtype)]
    if not all(math.isfinite(v) for v in vals):
        return None
    if all(0 < v < 1 for v in vals):
        return T.MaximumOp
    if all(v > 1 for v in vals):
        return T.MinimumOp
    return None


class WhereScaledToMax(RewritePattern):
    """where(x > 0, x, a·x) → maximum(x, a·x) (0 < a < 1), minimum(x, a·x) (a > 1)"""

    root = T.WhereOp

    def match_and_rewrite(self, op, rw):
        cond, on_true, on_false = op.operands
        found = _compared_to_zero(cond)
        if found is None:
            return False
        x, keeps_x = found
        m = on_false if keeps_x else on_true
        if (on_true if keeps_x else on_false) is not x:
            return False
        if not x.dtype.is_float or not (x.type == m.type == op.result.type):
            return False
        a = _multiplier(m, x)
        cls = None if a is None else _side(a, x.dtype)
        if cls is None:
            return False
        return replace(rw, op, make(rw, cls, [x, m]))


LEAKY_RELU_PATTERNS = (WhereScaledToMax(),)
