"""Products on traced arrays: np.dot, np.tensordot, np.inner, np.outer (``@`` / np.matmul is
a ufunc, see trace_ufuncs). Every contraction becomes one ``tensor.matmul``, with transposes
and reshapes around it when the contracted axes are not already last / first."""

from __future__ import annotations

import operator

import numpy as np

from ..ir.value import Value
from . import rules
from .trace_array import TracedArray
from .trace_functions import implements, require, value
from .trace_ufuncs import check_kwargs, operand


def contract(b, va: Value, vb: Value, axes_a, axes_b, what: str) -> Value:
    """Sum over ``va``'s ``axes_a`` against ``vb``'s ``axes_b``; the result's dims are a's free
    dims then b's free dims (np.tensordot's order)."""
    axes_a = [rules.normalize_axis(what, x, va.ndim) for x in axes_a]
    axes_b = [rules.normalize_axis(what, x, vb.ndim) for x in axes_b]
    require(len(axes_a) == len(axes_b), what, "the two axis lists differ in length")
    require(len(set(axes_a)) == len(axes_a) and len(set(axes_b)) == len(axes_b), what, "repeated axis")
    for x, y in zip(axes_a, axes_b):
        require(
            va.shape[x] == vb.shape[y],
            what,
            f"shape mismatch for sum: {va.shape} axis {x} vs {vb.shape} axis {y}",
        )
    free_a = [i for i in range(va.ndim) if i not in axes_a]
    free_b = [i for i in range(vb.ndim) if i not in axes_b]
    k = int(np.prod([va.shape[i] for i in axes_a], dtype=np.int64))
    out_shape = tuple(va.shape[i] for i in free_a) + tuple(vb.shape[i] for i in free_b)
    m = int(np.prod([va.shape[i] for i in free_a], dtype=np.int64))
    n = int(np.prod([vb.shape[i] for i in free_b], dtype=np.int64))
    a2 = b.reshape(b.transpose(va, free_a + axes_a), (m, k))
    b2 = b.reshape(b.transpose(vb, axes_b + free_b), (k, n))
    return b.reshape(b.matmul(a2, b2), out_shape)


def _pair(bld, a, b, what) -> tuple[Value, Value]:
    return value(bld, a, what), value(bld, b, what)


@implements(np.dot)
def dot(bld, a, b, out=None):
    """np.dot: a product with scalars, matmul for rank <= 2 or a 1-D operand, else a's last
    axis against b's second-to-last."""
    w = "numpy.dot"
    check_kwargs(w, {"out": out}, {})
    va, vb = _pair(bld, a, b, w)
    if va.ndim == 0 or vb.ndim == 0:
        return TracedArray(bld.mul(operand(bld, a, w), operand(bld, b, w)))
    if va.ndim <= 2 and vb.ndim <= 2 or va.ndim == 1 or vb.ndim == 1:
        return TracedArray(bld.matmul(va, vb))
    return TracedArray(contract(bld, va, vb, [-1], [-2], w))


@implements(np.tensordot)
def tensordot(bld, a, b, axes=2):
    w = "numpy.tensordot"
    va, vb = _pair(bld, a, b, w)
    if isinstance(axes, (int, np.integer)):
        n = operator.index(axes)
        require(0 <= n <= min(va.ndim, vb.ndim), w, f"axes={n} is out of range")
        axes_a, axes_b = list(range(va.ndim - n, va.ndim)), list(range(n))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    return TracedArray(contract(bld, va, vb, axes_a, axes_b, w))


@implements(np.inner)
def inner(bld, a, b):
    w = "numpy.inner"
    va, vb = _pair(bld, a, b, w)
    if va.ndim == 0 or vb.ndim == 0:
        return TracedArray(bld.mul(operand(bld, a, w), operand(bld, b, w)))
    return TracedArray(contract(bld, va, vb, [-1], [-1], w))


@implements(np.outer)
def outer(bld, a, b, out=None):
    w = "numpy.outer"
    check_kwargs(w, {"out": out}, {})
    va, vb = _pair(bld, a, b, w)
    return TracedArray(bld.mul(bld.reshape(va, (-1, 1)), bld.reshape(vb, (1, -1))))
