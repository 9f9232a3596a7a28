"""Reductions on traced arrays: np.sum / prod / mean / max / min / var / std / any / all,
argmax / argmin, count_nonzero and ``ufunc.reduce`` (np.add.reduce, np.maximum.reduce, ...)."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import int32
from . import rules
from .trace_array import NOVALUE, TracedArray, TraceError, dtype_arg
from .trace_functions import implements, require, value
from .trace_ufuncs import check_kwargs

_INITIAL_OP = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum"}


def reduction(
    b,
    kind: str,
    what: str,
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=NOVALUE,
    where=True,
    ddof=0,
) -> TracedArray:
    """``np.<kind>(a, axis, dtype, keepdims, initial, ddof)`` with NumPy's result dtype."""
    check_kwargs(what, {"out": out, "where": where}, {"where": True})
    v = value(b, a, what)
    dt = None if dtype is None else dtype_arg(dtype)
    if dt is not None:
        v = b.cast(v, dt)
    r = b.reduce(v, axis, kind, bool(keepdims), int(ddof))
    if initial is not NOVALUE:
        require(kind in _INITIAL_OP, what, "initial= is not supported")
        r = b.binary(_INITIAL_OP[kind], r, initial)
    if dt is not None and r.dtype is not dt:
        r = b.cast(r, dt)
    return TracedArray(r)


@implements(np.sum)
def sum_(b, a, axis=None, dtype=None, out=None, keepdims=False, initial=NOVALUE, where=True):
    return reduction(b, "sum", "numpy.sum", a, axis, dtype, out, keepdims, initial, where)


@implements(np.prod)
def prod(b, a, axis=None, dtype=None, out=None, keepdims=False, initial=NOVALUE, where=True):
    return reduction(b, "prod", "numpy.prod", a, axis, dtype, out, keepdims, initial, where)


@implements(np.max, np.amax)
def max_(b, a, axis=None, out=None, keepdims=False, initial=NOVALUE, where=True):
    return reduction(b, "max", "numpy.max", a, axis, None, out, keepdims, initial, where)


@implements(np.min, np.amin)
def min_(b, a, axis=None, out=None, keepdims=False, initial=NOVALUE, where=True):
    return reduction(b, "min", "numpy.min", a, axis, None, out, keepdims, initial, where)


@implements(np.mean)
def mean(b, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    return reduction(b, "mean", "numpy.mean", a, axis, dtype, out, keepdims, NOVALUE, where)


def _ddof(what, ddof, correction, mean):
    require(mean is NOVALUE, what, "mean= is not supported")
    if correction is NOVALUE:
        return ddof
    require(ddof == 0, what, "ddof and correction are the same argument; give one")
    return correction


@implements(np.var)
def var(
    b,
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=True,
    mean=NOVALUE,
    correction=NOVALUE,
):
    d = _ddof("numpy.var", ddof, correction, mean)
    return reduction(b, "var", "numpy.var", a, axis, dtype, out, keepdims, NOVALUE, where, d)


@implements(np.std)
def std(
    b,
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=True,
    mean=NOVALUE,
    correction=NOVALUE,
):
    d = _ddof("numpy.std", ddof, correction, mean)
    return reduction(b, "std", "numpy.std", a, axis, dtype, out, keepdims, NOVALUE, where, d)


@implements(np.any)
def any_(b, a, axis=None, out=None, keepdims=False, *, where=True):
    return reduction(b, "any", "numpy.any", a, axis, None, out, keepdims, NOVALUE, where)


@implements(np.all)
def all_(b, a, axis=None, out=None, keepdims=False, *, where=True):
    return reduction(b, "all", "numpy.all", a, axis, None, out, keepdims, NOVALUE, where)


@implements(np.count_nonzero)
def count_nonzero(b, a, axis=None, *, keepdims=False):
    v = value(b, a, "numpy.count_nonzero")
    nz = b.not_equal(v, False if v.dtype.is_bool else 0)
    return TracedArray(b.cast(b.reduce(nz, axis, "sum", bool(keepdims)), int32))


def _arg_extreme(b, kind: str, what: str, a, axis, out, keepdims) -> TracedArray:
    """Index of the first max (min) along ``axis`` (None: of the flattened array); a NaN counts
    as the extreme, as in NumPy: ``b.argmax`` / ``b.argmin`` (tensor.argmax / tensor.argmin,
    composites_index.py, the ops' one home)."""
    check_kwargs(what, {"out": out}, {})
    v = value(b, a, what)
    rank = v.ndim
    if axis is None:
        v = b.reshape(v, (-1,))
        ax = 0
    else:
        ax = axis
    ax = rules.normalize_axis(what, ax, v.ndim)
    require(v.shape[ax] > 0, what, "attempt to get the index of an extreme of an empty sequence")
    r = (b.argmax if kind == "max" else b.argmin)(v, axis=ax, keepdims=bool(keepdims))
    if axis is None and keepdims:
        r = b.reshape(r, (1,) * rank)
    return TracedArray(r)


@implements(np.argmax)
def argmax(b, a, axis=None, out=None, *, keepdims=False):
    return _arg_extreme(b, "max", "numpy.argmax", a, axis, out, keepdims)


@implements(np.argmin)
def argmin(b, a, axis=None, out=None, *, keepdims=False):
    return _arg_extreme(b, "min", "numpy.argmin", a, axis, out, keepdims)


def ufunc_reduce(
    kind: str, what: str, array, axis=0, dtype=None, out=None, keepdims=False, initial=NOVALUE, where=True
) -> TracedArray:
    """``np.add.reduce`` and friends (note NumPy's default ``axis=0``)."""
    if not isinstance(array, TracedArray):
        raise TraceError(f"{what}: the array to reduce must be a traced array")
    if kind in ("max", "min", "any", "all") and dtype is not None:
        raise TraceError(f"{what}: dtype= is not supported")
    return reduction(array.builder, kind, what, array, axis, dtype, out, keepdims, initial, where)
