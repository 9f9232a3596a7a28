"""NumPy functions on traced arrays (``__array_function__``): the registry and the dispatcher,
plus selection, creation-like and conversion functions (where, clip, full_like, astype, ...).

Handlers take the Builder first and then NumPy's own parameters (same names and defaults), so
arguments bind exactly as NumPy binds them; a bad call is a TraceError naming the function.
Reductions, shape functions, linear algebra and indexing live in sibling ``trace_*`` modules.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from ..ir.dtypes import from_numpy
from ..ir.errors import BuildError
from ..ir.value import Value
from .trace_array import NOVALUE, TracedArray, TraceError, dtype_arg, find_traced, memory_args
from .trace_ufuncs import check_kwargs, operand, rint

FUNCTIONS: dict[Callable, Callable] = {}
_SIGNATURES: dict[Callable, inspect.Signature] = {}


def implements(*np_funcs: Callable):
    """Register a handler ``fn(builder, <NumPy's parameters>)`` for NumPy functions."""

    def deco(fn):
        sig = inspect.signature(fn)
        _SIGNATURES[fn] = sig.replace(parameters=list(sig.parameters.values())[1:])
        for f in np_funcs:
            FUNCTIONS[f] = fn
        return fn

    return deco


def numpy_name(func) -> str:
    return f"{getattr(func, '__module__', None) or 'numpy'}.{func.__name__}"


def apply_function(func: Callable, args: tuple, kwargs: dict):
    """``__array_function__`` of TracedArray: build the ops of ``func(*args, **kwargs)``."""
    name = numpy_name(func)
    handler = FUNCTIONS.get(func)
    if handler is None:
        raise TraceError(
            f"{name} is not supported when tracing (see docs/trace.md for the supported NumPy functions)"
        )
    t = find_traced(list(args) + list(kwargs.values()))
    try:
        bound = _SIGNATURES[handler].bind(*args, **kwargs)
    except TypeError as e:
        raise TraceError(f"{name}: {e}") from None
    try:
        return handler(t.builder, *bound.args, **bound.kwargs)
    except BuildError as e:
        if str(e).startswith(name):
            raise
        raise type(e)(f"{name}: {e}") from None


def value(b, x, what: str) -> Value:
    """Any array-like argument as a Value of the trace."""
    return b.as_value(operand(b, x, what))


def dtype_of(b, x, what: str):
    return value(b, x, what).dtype if isinstance(x, (TracedArray, Value)) else from_numpy(np.asarray(x).dtype)


def view(base, v: Value) -> TracedArray:
    """The result of a NumPy call that returns a view of ``base``."""
    return base.view(v) if isinstance(base, TracedArray) else TracedArray(v)


def require(cond: bool, what: str, message: str) -> None:
    if not cond:
        raise TraceError(f"{what}: {message}")


# ---- selection ------------------------------------------------------------------------------


@implements(np.where)
def where(b, condition, x=NOVALUE, y=NOVALUE):
    if x is NOVALUE and y is NOVALUE:
        raise TraceError(
            "numpy.where: the one-argument form (np.nonzero) has a data-dependent "
            "shape and cannot be traced; use np.where(cond, a, b)"
        )
    require(
        x is not NOVALUE and y is not NOVALUE,
        "numpy.where",
        "either both or neither of x and y should be given",
    )
    w = "numpy.where"
    return TracedArray(b.where(operand(b, condition, w), operand(b, x, w), operand(b, y, w)))


@implements(np.clip)
def clip(
    b,
    a,
    a_min=NOVALUE,
    a_max=NOVALUE,
    out=None,
    *,
    min=NOVALUE,
    max=NOVALUE,  # noqa: A002
    **kwargs,
):
    w = "numpy.clip"
    check_kwargs(w, {"out": out, **kwargs}, {})
    if min is not NOVALUE:
        require(a_min is NOVALUE, w, "a_min and min are the same argument; give one")
        a_min = min
    if max is not NOVALUE:
        require(a_max is NOVALUE, w, "a_max and max are the same argument; give one")
        a_max = max
    lo = None if a_min is NOVALUE or a_min is None else operand(b, a_min, w)
    hi = None if a_max is NOVALUE or a_max is None else operand(b, a_max, w)
    return TracedArray(b.clip(operand(b, a, w), lo, hi))


# ---- creation from a template ------------------------------------------------------------------


def _like(b, a, fill, dtype, shape, what):
    dt = dtype_arg(dtype) if dtype is not None else dtype_of(b, a, what)
    if shape is None:
        shape = np.shape(a) if not isinstance(a, TracedArray) else a.shape
    elif isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(d) for d in shape)
    if isinstance(fill, (bool, int, float, np.generic)) and np.ndim(fill) == 0:
        return TracedArray(b.full(shape, fill.item() if isinstance(fill, np.generic) else fill, dt))
    return TracedArray(b.broadcast_to(b.cast(value(b, fill, what), dt), shape))


@implements(np.full_like)
def full_like(b, a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    memory_args("numpy.full_like", order, subok, device)
    return _like(b, a, fill_value, dtype, shape, "numpy.full_like")


@implements(np.zeros_like)
def zeros_like(b, a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    memory_args("numpy.zeros_like", order, subok, device)
    return _like(b, a, 0, dtype, shape, "numpy.zeros_like")


@implements(np.ones_like)
def ones_like(b, a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    memory_args("numpy.ones_like", order, subok, device)
    return _like(b, a, 1, dtype, shape, "numpy.ones_like")


@implements(np.empty_like)
def empty_like(b, prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Uninitialised memory in NumPy; zeros here (the values are never defined)."""
    memory_args("numpy.empty_like", order, subok, device)
    return _like(b, prototype, 0, dtype, shape, "numpy.empty_like")


# ---- conversion and copies ---------------------------------------------------------------------


@implements(np.astype)
def astype(b, x, dtype, *, copy=True, device=None):
    memory_args("numpy.astype", device=device)
    v = value(b, x, "numpy.astype")
    dt = dtype_arg(dtype)
    if not copy and isinstance(x, TracedArray) and v.dtype is dt:
        return x
    return TracedArray(b.cast(v, dt))


@implements(np.copy)
def copy(b, a, order="K", subok=False):
    memory_args("numpy.copy", order, subok)
    return TracedArray(value(b, a, "numpy.copy"))


@implements(np.round, np.around)
def round_(b, a, decimals=0, out=None):
    w = "numpy.round"
    check_kwargs(w, {"out": out}, {})
    v = value(b, a, w)
    d = int(decimals)
    if not v.dtype.is_float:
        require(d >= 0, w, f"rounding {v.dtype.numpy_name} to decimals={d} is not supported")
        return TracedArray(b.cast(v, from_numpy(np.round(np.zeros(1, v.dtype.np_dtype)).dtype)))
    if d == 0:
        return TracedArray(rint(b, v))
    if d > 0:
        return TracedArray(b.div(rint(b, b.mul(v, 10.0**d)), 10.0**d))
    return TracedArray(b.mul(rint(b, b.div(v, 10.0**-d)), 10.0**-d))


# ---- static queries ------------------------------------------------------------------------------


@implements(np.shape)
def shape(_b, a):
    return tuple(a.shape) if isinstance(a, TracedArray) else np.shape(a)


@implements(np.ndim)
def ndim(_b, a):
    return a.ndim if isinstance(a, TracedArray) else np.ndim(a)


@implements(np.size)
def size(_b, a, axis=None):
    if not isinstance(a, TracedArray):
        return np.size(a, axis)
    return a.size if axis is None else a.shape[axis]


from . import (  # noqa: E402,F401
    trace_einsum,
    trace_indexing,
    trace_linalg,
    trace_matrix,
    trace_pad,
    trace_reduce,
    trace_shape,
)
