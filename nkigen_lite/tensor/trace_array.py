"""TracedArray: what a ``@nk.trace`` function receives instead of a NumPy array.

A TracedArray wraps one tensor IR Value of the graph being built. It looks like an ndarray
(``shape``, ``dtype``, ``ndim``, ``T``, operators, indexing, ``x.sum(...)``-style methods) and
implements NumPy's ``__array_ufunc__`` / ``__array_function__`` protocols, so ``np.exp(x)`` or
``np.concatenate([a, b])`` add ops to the graph. It holds no data: ``np.asarray(x)``,
``float(x)`` and ``if x > 0:`` raise a TraceError.

In-place updates (``x += y``, ``x[0:2] = v``) rebind the wrapped Value. NumPy would also change
every view sharing the array's memory, which tracing cannot follow, so an in-place update is
refused while another live traced array shares memory with it (a view from basic indexing,
reshape, transpose, ...).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..ir.dtypes import DType, from_numpy, get_dtype, tfloat32
from ..ir.errors import BuildError
from ..ir.value import Value


class TraceError(BuildError, TypeError):
    """A traced function did something tracing cannot express (data-dependent control flow,
    converting a traced array to data, an unsupported NumPy call, ...)."""


class _NoValue:
    """Marker for 'argument not given' in NumPy-style signatures."""

    def __repr__(self) -> str:
        return "<no value>"


NOVALUE = _NoValue()

_NO_DATA = (
    "a traced array has no data at trace time: only its shape {shape} and dtype {dtype} are known; {what}"
)


def memory_args(what: str, order="K", subok=False, device=None) -> None:
    """Check NumPy's memory-layout arguments, which do not change a traced result's values:
    ``order`` one of K, A, C, F; ``subok`` a bool; ``device`` None or "cpu"."""
    if order not in ("K", "A", "C", "F", None):
        raise TraceError(f"{what}: order={order!r} is not a NumPy memory order (K, A, C or F)")
    if not isinstance(subok, (bool, np.bool_)):
        raise TraceError(f"{what}: subok must be a bool, got {subok!r}")
    if device not in (None, "cpu"):
        raise TraceError(f"{what}: device={device!r} is not supported when tracing (None or 'cpu')")


def dtype_arg(spec) -> DType:
    """A NumPy dtype argument as a DType, 64-bit types narrowed to 32-bit (float64 -> f32)."""
    if isinstance(spec, DType):
        return spec
    try:
        npd = np.dtype(spec)
    except TypeError:
        return get_dtype(spec)  # raises a BuildError naming the spec
    return from_numpy(npd)


def is_traced(x: Any) -> bool:
    return isinstance(x, TracedArray)


def find_traced(args) -> TracedArray | None:
    """The first TracedArray in ``args`` (looking into lists and tuples)."""
    for a in args:
        if isinstance(a, TracedArray):
            return a
        if isinstance(a, (list, tuple)):
            t = find_traced(a)
            if t is not None:
                return t
    return None


class TracedArray:
    """An array under tracing: a graph Value with NumPy's array interface (no data)."""

    __slots__ = ("_value", "_family", "__weakref__")
    __hash__ = None  # unhashable, like ndarray

    def __init__(self, value: Value, view_of: TracedArray | None = None):
        if not isinstance(value, Value) or value._builder is None:
            raise BuildError(f"TracedArray wraps a builder-made Value, got {value!r}")
        self._value = value
        # every live array sharing memory with this one (itself included), keyed by id
        self._family = view_of._family if view_of is not None else weakref.WeakValueDictionary()
        self._family[id(self)] = self

    # ---- plumbing -------------------------------------------------------------------------
    @property
    def value(self) -> Value:
        """The IR Value this array stands for."""
        return self._value

    @property
    def builder(self):
        return self._value._builder

    def view(self, value: Value) -> TracedArray:
        """A new traced array sharing memory with this one (NumPy would return a view)."""
        return TracedArray(value, view_of=self)

    def check_inplace(self, what: str) -> None:
        """Refuse an in-place update while another live traced array shares this memory."""
        others = [o for o in self._family.values() if o is not self]
        if others:
            raise TraceError(
                f"{what}: in-place update of a traced array that shares memory with another live "
                f"array ({others[0]!r}, a view made by indexing, reshape or transpose); NumPy "
                "would change both, tracing cannot: build a new array instead "
                "(y = x + 1, np.where, np.concatenate)"
            )

    def rebind(self, value: Value, what: str) -> TracedArray:
        """Finish an in-place update: the shape is kept and the dtype cast back, as NumPy does."""
        if value.shape != self.shape:
            raise TraceError(
                f"{what}: the result shape {value.shape} differs from the target's "
                f"{self.shape} (NumPy cannot broadcast into an in-place target)"
            )
        dt = self._value.dtype
        if value.dtype is not dt:
            if not _same_kind(value.dtype, dt):
                raise TraceError(
                    f"{what}: cannot cast the result from {value.dtype.numpy_name} to "
                    f"{dt.numpy_name} in place (NumPy's 'same_kind' rule)"
                )
            value = self.builder.cast(value, dt)
        self._value = value
        return self

    # ---- array attributes -----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.shape

    @property
    def ndim(self) -> int:
        return len(self._value.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self):
        """The NumPy dtype (ml_dtypes for bf16 / fp8); tf32, which NumPy lacks, is nk.tfloat32."""
        dt = self._value.dtype
        return dt if dt is tfloat32 else dt.np_dtype

    @property
    def itemsize(self) -> int:
        return self._value.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def T(self) -> TracedArray:
        return self.transpose()

    @property
    def mT(self) -> TracedArray:
        return _call(np.matrix_transpose, self)

    def __repr__(self) -> str:
        return f"TracedArray(shape={self.shape}, dtype={self._value.dtype.numpy_name})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a rank-0 traced array)")
        return self.shape[0]

    def __iter__(self):
        """Iterate over the first axis (unrolled at trace time: the shape is static)."""
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    # ---- no data at trace time --------------------------------------------------------------
    def _no_data(self, what: str) -> TraceError:
        return TraceError(_NO_DATA.format(shape=self.shape, dtype=self._value.dtype.numpy_name, what=what))

    def __array__(self, dtype=None, copy=None):
        raise self._no_data(
            "it cannot become a NumPy array (np.asarray / np.array / a NumPy "
            "function tracing does not support)"
        )

    def __bool__(self):
        raise self._no_data(
            "its truth value is unknown, so data-dependent Python control flow "
            "(if / while / and / or on array values) cannot be traced; "
            "use np.where(cond, a, b)"
        )

    def __float__(self):
        raise self._no_data("float() needs a value")

    def __int__(self):
        raise self._no_data("int() needs a value")

    def __index__(self):
        raise self._no_data("it cannot be used as a Python index or size")

    def __complex__(self):
        raise self._no_data("complex() needs a value")

    def __contains__(self, item):
        raise self._no_data("'in' needs the values")

    def item(self, *_args):
        raise self._no_data("item() needs a value")

    def tolist(self):
        raise self._no_data("tolist() needs the values")

    def __getattr__(self, name: str):
        if not name.startswith("__") and hasattr(np.ndarray, name):
            raise AttributeError(
                f"ndarray.{name} is not supported on traced arrays ({self!r}); see docs/trace.md for what is"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ---- indexing and methods -------------------------------------------------------------------
    def __getitem__(self, key) -> TracedArray:
        from .trace_indexing import getitem

        return getitem(self, key)

    def __setitem__(self, key, val) -> None:
        from .trace_indexing import setitem

        setitem(self, key, val)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True) -> TracedArray:
        if casting != "unsafe":
            raise TraceError(f"astype: casting={casting!r} is not supported when tracing")
        memory_args("astype", order, subok)
        return _call(np.astype, self, dtype, copy=copy)

    def reshape(self, *shape, order="C", copy=None) -> TracedArray:
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return _call(np.reshape, self, shape, order=order, copy=copy)

    def transpose(self, *axes) -> TracedArray:
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return _call(np.transpose, self, axes or None)

    def flatten(self, order="C") -> TracedArray:
        return TracedArray(_call(np.ravel, self, order).value)

    # ---- NumPy protocols ----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .trace_ufuncs import apply_ufunc

        return apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from .trace_functions import apply_function

        return apply_function(func, args, kwargs)


def _call(func, *args, **kwargs):
    from .trace_functions import apply_function

    return apply_function(func, args, kwargs)


def _install_methods() -> None:
    """ndarray methods that are NumPy functions with the array first (``x.sum(axis=0)``)."""
    names = (
        "all",
        "any",
        "argmax",
        "argmin",
        "clip",
        "copy",
        "cumsum",
        "cumprod",
        "diagonal",
        "dot",
        "max",
        "mean",
        "min",
        "nonzero",
        "prod",
        "ravel",
        "repeat",
        "round",
        "squeeze",
        "std",
        "sum",
        "swapaxes",
        "take",
        "trace",
        "var",
    )
    for name in names:
        func = getattr(np, name)

        def method(self, *args, _f=func, **kwargs):
            return _call(_f, self, *args, **kwargs)

        method.__name__ = name
        method.__doc__ = f"Same as numpy.{name}(x, ...)."
        setattr(TracedArray, name, method)


def _same_kind(src: DType, dst: DType) -> bool:
    """NumPy's 'same_kind' casting: never to a lower kind (float -> int, int -> bool)."""
    order = {"bool": 0, "uint": 1, "int": 1, "float": 2}
    if src.is_native_numpy and dst.is_native_numpy:
        return bool(np.can_cast(src.np_dtype, dst.np_dtype, "same_kind"))
    return order[src.kind.value] <= order[dst.kind.value]


def _install_operators() -> None:
    """Operators and in-place operators: each is the NumPy ufunc it stands for."""
    binary = {
        "add": np.add,
        "sub": np.subtract,
        "mul": np.multiply,
        "truediv": np.true_divide,
        "floordiv": np.floor_divide,
        "mod": np.remainder,
        "pow": np.power,
        "matmul": np.matmul,
        "and": np.bitwise_and,
        "or": np.bitwise_or,
        "xor": np.bitwise_xor,
        "lshift": np.left_shift,
        "rshift": np.right_shift,
    }
    compare = {
        "lt": np.less,
        "le": np.less_equal,
        "gt": np.greater,
        "ge": np.greater_equal,
        "eq": np.equal,
        "ne": np.not_equal,
    }
    unary = {"neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert}

    def make(uf, reflected=False):
        def op(self, other):
            from .trace_ufuncs import apply_ufunc

            args = (other, self) if reflected else (self, other)
            return apply_ufunc(uf, "__call__", args, {})

        return op

    def make_inplace(uf, name):
        def op(self, other):
            from .trace_ufuncs import apply_ufunc

            what = f"x {name}= ... (numpy.{uf.__name__}, in place)"
            self.check_inplace(what)
            res = apply_ufunc(uf, "__call__", (self, other), {})
            return self.rebind(res.value, what)

        return op

    symbols = {
        "add": "+",
        "sub": "-",
        "mul": "*",
        "truediv": "/",
        "floordiv": "//",
        "mod": "%",
        "pow": "**",
        "matmul": "@",
        "and": "&",
        "or": "|",
        "xor": "^",
        "lshift": "<<",
        "rshift": ">>",
    }
    for name, uf in binary.items():
        setattr(TracedArray, f"__{name}__", make(uf))
        setattr(TracedArray, f"__r{name}__", make(uf, True))
        setattr(TracedArray, f"__i{name}__", make_inplace(uf, symbols[name]))
    for name, uf in compare.items():
        setattr(TracedArray, f"__{name}__", make(uf))
    for name, uf in unary.items():

        def op(self, _uf=uf):
            from .trace_ufuncs import apply_ufunc

            return apply_ufunc(_uf, "__call__", (self,), {})

        setattr(TracedArray, f"__{name}__", op)


_install_operators()
_install_methods()
