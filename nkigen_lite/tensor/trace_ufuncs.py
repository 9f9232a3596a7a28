"""NumPy ufuncs on traced arrays: each supported ufunc maps to tensor ops.

Most ufuncs are one tensor op (``np.exp`` -> ``tensor.exp``); a few are composed from several
with NumPy's results (``np.log1p``, ``np.expm1``, ``np.rint``, ``np.isnan``, ``np.fmax``, ...).
Operand conversion follows the Builder: Python scalars are weak (NEP 50), NumPy scalars and
arrays are strong constants (64-bit narrowed to 32-bit).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..ir.dtypes import bool_, from_numpy
from ..ir.registry import table
from ..ir.value import Value
from . import ops, rules
from .trace_array import TracedArray, TraceError, find_traced

# ufunc keyword arguments accepted at their default value only
_KW_DEFAULTS = {
    "where": True,
    "casting": "same_kind",
    "order": "K",
    "dtype": None,
    "subok": True,
    "signature": None,
}

# ufunc.reduce -> reduction kind
REDUCE_KINDS = {
    np.add: "sum",
    np.multiply: "prod",
    np.maximum: "max",
    np.minimum: "min",
    np.logical_and: "all",
    np.logical_or: "any",
}

UFUNCS: dict[np.ufunc, Callable[..., Value]] = table()
"""Ufuncs composed from several ops; a ufunc in an op class's ``traced_from`` is that op."""


def direct_op(ufunc: np.ufunc):
    """The elementwise op class whose ``traced_from`` lists ``ufunc``, or None."""
    for t in (ops.UNARY_OPS, ops.BINARY_OPS):
        for cls in t.values():
            if ufunc in cls.traced_from:
                return cls
    return None


def _handler(ufunc: np.ufunc):
    """How to trace ``ufunc``: a composed handler, else its op class's; None if unsupported."""
    handler = UFUNCS.get(ufunc)
    if handler is not None:
        return handler
    cls = direct_op(ufunc)
    if cls is None:
        return None
    if issubclass(cls, ops.UnaryOp):
        return lambda b, x: b.unary(cls.short_name(), x)
    return lambda b, x, y: b.binary(cls.short_name(), x, y)


def operand(b, x, what: str):
    """A ufunc or function argument as something the Builder accepts."""
    if isinstance(x, TracedArray):
        if x.builder is not b:
            raise TraceError(f"{what}: {x!r} belongs to a different trace")
        return x.value
    if isinstance(x, (bool, int, float, np.generic, np.ndarray)):
        return x
    if isinstance(x, (list, tuple)):
        if find_traced(x) is not None:
            raise TraceError(
                f"{what}: a list or tuple holding traced arrays is not an array; "
                "use np.stack or np.concatenate"
            )
        try:
            return np.asarray(x)
        except ValueError as e:
            raise TraceError(f"{what}: cannot make an array of {x!r}: {e}") from None
    raise TraceError(f"{what}: cannot use {type(x).__name__} {x!r} as an array operand")


def pair(b, x, y) -> tuple[Value, Value]:
    """Two operands as Values; a Python scalar takes the other operand's dtype (weak)."""
    if isinstance(x, Value) or not isinstance(y, Value):
        vx = b.as_value(x)
        return vx, b.as_value(y, vx.dtype)
    vy = b.as_value(y)
    return b.as_value(x, vy.dtype), vy


def check_kwargs(what: str, kwargs: dict, defaults: dict) -> None:
    """Refuse keyword arguments that tracing does not support (``out=``, ``where=``, ...)."""
    for k, v in kwargs.items():
        if k == "out" and v is not None:
            raise TraceError(
                f"{what}: out= is not supported when tracing (a traced result "
                "cannot be written into an existing array); assign the result"
            )
        if k in defaults and (v is defaults[k] or (v == defaults[k]) is True):
            continue
        if k != "out":
            raise TraceError(f"{what}: keyword argument {k}={v!r} is not supported when tracing")


def apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict):
    """``__array_ufunc__`` of TracedArray: build the ops of ``ufunc.method(*inputs)``."""
    what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    t = find_traced(inputs)
    if t is None:  # only out= holds a traced array
        t = find_traced(kwargs.get("out", ()))
    b = t.builder
    if method == "reduce" and ufunc in REDUCE_KINDS:
        from .trace_reduce import ufunc_reduce

        return ufunc_reduce(REDUCE_KINDS[ufunc], what, *inputs, **kwargs)
    handler = _handler(ufunc)
    if handler is None or method not in ("__call__", "outer"):
        raise TraceError(
            f"{what} is not supported when tracing (see docs/trace.md for the supported NumPy functions)"
        )
    check_kwargs(what, kwargs, _KW_DEFAULTS)
    ops = [operand(b, x, what) for x in inputs]
    if method == "outer":
        if len(ops) != 2:
            raise TraceError(f"{what} needs a binary ufunc")
        a, c = (b.as_value(o) if isinstance(o, (Value, np.ndarray)) else o for o in ops)
        if isinstance(a, Value):
            a = b.reshape(a, a.shape + (1,) * (c.ndim if isinstance(c, Value) else 0))
        ops = [a, c]
    return TracedArray(handler(b, *ops))


def _register(ufuncs, fn) -> None:
    for u in ufuncs if isinstance(ufuncs, (list, tuple)) else (ufuncs,):
        UFUNCS[u] = fn


_register(np.matmul, lambda b, x, y: b.matmul(x, y))
_register([np.positive, np.conjugate], lambda b, x: b.as_value(x))


def _numpy_dtype(ufunc, v: Value):
    """NumPy's result dtype of ``ufunc`` on ``v``'s dtype (floats kept, ints -> NumPy's float)."""
    if v.dtype.is_float:
        return v.dtype
    return rules.unary_dtype(f"numpy.{ufunc.__name__}", None, True, v.dtype)


def _as_float(b, ufunc, x) -> Value:
    """``x`` as a float Value: integer and bool inputs cast to the float NumPy would use."""
    v = b.as_value(x)
    return b.cast(v, _numpy_dtype(ufunc, v))


def _reciprocal(b, x):
    v = b.as_value(x)
    if not v.dtype.is_float:
        raise TraceError(
            f"numpy.reciprocal of {v.dtype.numpy_name} is integer division in "
            "NumPy (1 // x) and is not supported when tracing; use 1 / x"
        )
    return b.unary("reciprocal", v)


def _tan(b, x):
    v = _as_float(b, np.tan, x)
    return b.div(b.sin(v), b.cos(v))


def _log1p(b, x):
    """log(1 + x) without the cancellation of 1 + x (Goldberg: log(u) * x / (u - 1))."""
    v = _as_float(b, np.log1p, x)
    u = b.add(v, 1.0)
    d = b.sub(u, 1.0)
    r = b.mul(b.log(u), b.div(v, d))
    r = b.where(b.equal(d, 0.0), v, r)
    return b.where(b.equal(u, math.inf), u, r)


def _expm1(b, x):
    """exp(x) - 1 accurate near 0 (Kahan: (u - 1) * x / log(u) with u = exp(x))."""
    v = _as_float(b, np.expm1, x)
    u = b.exp(v)
    d = b.sub(u, 1.0)
    r = b.mul(d, b.div(v, b.log(u)))
    r = b.where(b.equal(d, -1.0), -1.0, r)
    r = b.where(b.equal(d, 0.0), v, r)
    return b.where(b.equal(u, math.inf), u, r)


def _log_of(b, base: float, like: Value) -> Value:
    """log(base) computed in the graph (not a rounded constant), so the float64 oracle keeps
    it exact: a folded ``math.log(base)`` would be declared, and rounded, in ``like``'s dtype."""
    return b.log(b.full((), base, like.dtype))


def _log_base(base: float, ufunc):
    def fn(b, x):
        v = _as_float(b, ufunc, x)
        return b.div(b.log(v), _log_of(b, base, v))

    return fn


def _exp2(b, x):
    v = _as_float(b, np.exp2, x)
    return b.exp(b.mul(v, _log_of(b, 2.0, v)))


def _logaddexp(b, x, y):
    """log(exp(x) + exp(y)) = max(x, y) + log1p(exp(-|x - y|)). Equal arguments use a difference
    of 0 (so equal infinities give that infinity, not inf - inf = nan); no rounded ln 2 constant."""
    vx = _as_float(b, np.logaddexp, x) if isinstance(x, Value) else x
    vy = _as_float(b, np.logaddexp, y) if isinstance(y, Value) else y
    vx, vy = pair(b, vx, vy)
    m = b.maximum(vx, vy)
    d = b.where(b.equal(vx, vy), 0.0, b.sub(vx, vy))
    return b.add(m, _log1p(b, b.exp(b.neg(b.abs(d)))))


def _isnan(b, x):
    v = b.as_value(x)
    if not v.dtype.is_float:
        return b.full(v.shape, False, bool_)
    return b.not_equal(v, v)


def _isinf(b, x):
    v = b.as_value(x)
    if not v.dtype.is_float:
        return b.full(v.shape, False, bool_)
    return b.equal(b.abs(v), math.inf)


def _isfinite(b, x):
    v = b.as_value(x)
    if not v.dtype.is_float:
        return b.full(v.shape, True, bool_)
    return b.equal(b.sub(v, v), 0.0)  # inf - inf and nan - nan are nan


def _trunc(b, x):
    v = b.as_value(x)
    if not v.dtype.is_float:
        return b.floor(v)  # NumPy's dtype for integers (the values are unchanged)
    return b.where(b.less(v, 0.0), b.ceil(v), b.floor(v))


def rint(b, x):
    """Round half to even, from floor and exact comparisons; a zero result has x's sign."""
    v = b.as_value(x)
    if not v.dtype.is_float:
        out = from_numpy(np.rint(np.zeros(1, v.dtype.np_dtype)).dtype)
        return b.cast(v, out)
    r = b.floor(v)
    d = b.sub(v, r)  # exact, in [0, 1)
    up = b.add(r, 1.0)
    odd = b.equal(b.sub(r, b.mul(b.floor(b.mul(r, 0.5)), 2.0)), 1.0)
    tie = b.where(odd, up, r)
    out = b.where(b.greater(d, 0.5), up, b.where(b.less(d, 0.5), r, tie))
    # a zero result keeps x's sign, as NumPy's (rint(-0.25) is -0.0; floor(x) + 1 gives +0.0)
    return b.where(b.equal(out, 0.0), b.mul(v, 0.0), out)


def _fmax_fmin(kind: str):
    def fn(b, x, y):
        vx, vy = pair(b, x, y)
        r = b.binary(kind, vx, vy)
        if not r.dtype.is_float:
            return r
        r = b.where(_isnan(b, vx), vy, r)
        return b.where(_isnan(b, vy), vx, r)

    return fn


_register(np.reciprocal, _reciprocal)
_register(np.tan, _tan)
_register(np.log1p, _log1p)
_register(np.expm1, _expm1)
_register(np.log2, _log_base(2.0, np.log2))
_register(np.log10, _log_base(10.0, np.log10))
_register(np.exp2, _exp2)
_register(np.logaddexp, _logaddexp)
_register(np.isnan, _isnan)
_register(np.isinf, _isinf)
_register(np.isfinite, _isfinite)
_register(np.trunc, _trunc)
_register(np.rint, rint)
_register(np.fmax, _fmax_fmin("maximum"))
_register(np.fmin, _fmax_fmin("minimum"))
