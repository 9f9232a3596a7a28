"""Decompositions of reductions: keepdims=False, mean, var/std, and prod without the ALU."""

from __future__ import annotations

import math

from ...tensor import ops as T
from ..int_range import int_range
from ..match import replace
from .base import DecompositionPattern, Emitter, work_dtype


def _count(op) -> int:
    shape = op.operand(0).shape
    return math.prod(shape[a] for a in op.attrs["axes"])


def _inverse(n: int) -> float:
    return 1.0 / n if n > 0 else math.inf  # NumPy divides by zero here: inf or nan results


def _mean(e: Emitter, x, axes, n: int):
    return e.mul(e.reduce(x, axes, "sum"), _inverse(n))


class ReduceKeepdims(DecompositionPattern):
    """reduce(x, axes, keepdims=False) → reshape(reduce(x, axes, keepdims=True))"""

    root = T.ReduceOp
    benefit = 2

    def match_and_rewrite(self, op, rw):
        if op.attrs["keepdims"]:
            return False
        attrs = dict(op.attrs, keepdims=True)
        kept = rw.create(T.ReduceOp, [op.operand(0)], attrs, name_hint=op.attrs["kind"]).result
        return replace(rw, op, Emitter(rw).reshape(kept, op.result.shape))


class MeanToSum(DecompositionPattern):
    """mean(x) → sum(x) * (1/N)   (computed in f32 for narrower floats and for ints)"""

    root = T.ReduceOp

    def match_and_rewrite(self, op, rw):
        if op.attrs["kind"] != "mean" or not op.attrs["keepdims"]:
            return False
        e = Emitter(rw)
        r = op.result
        xw = e.cast(op.operand(0), work_dtype(r.dtype))
        return replace(rw, op, e.cast(_mean(e, xw, op.attrs["axes"], _count(op)), r.dtype))


class VarStdTwoPass(DecompositionPattern):
    """var(x, ddof) → sum(square(x - mean(x))) * 1/(N - ddof);  std → sqrt(var)"""

    root = T.ReduceOp

    def match_and_rewrite(self, op, rw):
        kind = op.attrs["kind"]
        if kind not in ("var", "std") or not op.attrs["keepdims"]:
            return False
        e = Emitter(rw)
        r = op.result
        axes, n = op.attrs["axes"], _count(op)
        xw = e.cast(op.operand(0), work_dtype(r.dtype))
        d = e.sub(xw, _mean(e, xw, axes, n))
        v = e.mul(e.reduce(e.square(d), axes, "sum"), _inverse(n - op.attrs["ddof"]))
        return replace(rw, op, e.cast(e.sqrt(v) if kind == "std" else v, r.dtype))


def _fp32_product_exact(x, n: int) -> bool:
    """Whether a multiply reduction (computed in fp32) of ``n`` elements of ``x`` is exact: a
    float, or integers whose every partial product is provably within 2**24."""
    if not x.dtype.is_int:
        return True
    lo, hi = int_range(x)
    bound = max(-lo, hi)
    return bound <= 1 or n * math.log2(bound) <= 24


class ProdByTree(DecompositionPattern):
    """prod(x, axis) → pairwise products x[:h] * x[h:2h] until one element is left (odd
    leftovers multiply in at the end); exact for zeros and negatives, no exp(sum(log)); also
    for integer products the fp32 multiply reduction could round (the integer multiplies wrap
    mod 2**32 like NumPy's)"""

    root = T.ReduceOp

    def match_and_rewrite(self, op, rw):
        if op.attrs["kind"] != "prod" or not op.attrs["keepdims"]:
            return False
        if self.caps.has_reduce("prod") and _fp32_product_exact(op.operand(0), _count(op)):
            return False
        e = Emitter(rw)
        r = op.result
        w = work_dtype(r.dtype)
        x = e.cast(op.operand(0), w)
        for axis in op.attrs["axes"]:
            n = x.shape[axis]
            if n == 0:
                shape = list(x.shape)
                shape[axis] = 1
                x = e.full(1, w, shape)
                continue
            leftovers = []
            while n > 1:
                if n % 2:
                    leftovers.append(e.slice_axis(x, axis, n - 1, n))
                    n -= 1
                h = n // 2
                x = e.mul(e.slice_axis(x, axis, 0, h), e.slice_axis(x, axis, h, n))
                n = h
            for extra in leftovers:
                x = e.mul(x, extra)
        return replace(rw, op, e.cast(x, r.dtype))
