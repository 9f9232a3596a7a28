"""``nk.trace``: build a tensor Graph by running a plain NumPy function on traced arrays.

    @nk.trace
    def f(x, w):
        return np.tanh(x @ w)

    g = f.trace(np.empty((128, 64), np.float32), np.empty((64, 32), np.float32))
    f(x, w)          # still the plain NumPy function

Example arguments give the inputs' shapes and dtypes: a NumPy array, an ``nk.TensorType`` or a
``(shape, dtype)`` pair becomes a graph input named after its parameter (``*args`` entries are
``args_0, args_1, ...``; lists, tuples and dicts of arrays are ``w_0`` / ``w_key``). Anything
else (Python scalars, NumPy scalars, strings, ...) is passed through as a compile-time constant,
as are the parameters named in ``static_argnames``. 64-bit dtypes narrow to 32-bit.

Outputs: one array is ``y``; a tuple or list is ``y0, y1, ...``; a dict keeps its keys (which
must be identifiers). Ops whose results the outputs do not need are removed. See docs/trace.md.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ..ir.dtypes import DType, from_numpy
from ..ir.errors import BuildError, NkWarning
from ..ir.graph import Graph
from ..ir.value import sanitize_hint
from . import trace_functions  # noqa: F401  (registers the NumPy function handlers)
from .builder import Builder
from .trace_array import TracedArray, TraceError, dtype_arg
from .types import TensorType

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def trace(fn: Callable | None = None, *, name: str | None = None, static_argnames: Sequence[str] = ()):
    """Wrap a NumPy function: ``f.trace(*example_args)`` builds its Graph, ``f(...)`` runs it.

    Use as ``@nk.trace`` or ``@nk.trace(name="mlp", static_argnames=("eps",))``.
    """
    if fn is None:
        return lambda f: TracedFunction(f, name=name, static_argnames=static_argnames)
    return TracedFunction(fn, name=name, static_argnames=static_argnames)


class TracedFunction:
    """A NumPy function that can also be traced into a tensor Graph (see ``trace``)."""

    def __init__(self, fn: Callable, *, name: str | None = None, static_argnames: Sequence[str] = ()):
        if not callable(fn):
            raise BuildError(f"nk.trace needs a function, got {type(fn).__name__}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.signature = _signature(fn)
        self.graph_name = sanitize_hint(name or getattr(fn, "__name__", None)) or "traced"
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        unknown = [s for s in static_argnames if s not in self.signature.parameters]
        if unknown:
            raise BuildError(
                f"nk.trace({self.graph_name}): static_argnames {unknown} are not "
                f"parameters of {self.graph_name}{self.signature}"
            )
        self.static_argnames = tuple(static_argnames)

    def __call__(self, *args, **kwargs):
        """Run the original function (plain NumPy, or inline inside another trace)."""
        return self.fn(*args, **kwargs)

    def trace(self, *args, **kwargs) -> Graph:
        """Build the Graph for example arguments (arrays or specs give the inputs)."""
        return self.trace_with(args, kwargs)

    def trace_with(self, args, kwargs, warn_constants: bool = True) -> Graph:
        """``trace(*args, **kwargs)``; ``warn_constants=False`` drops the NkWarning about a
        number argument becoming a compile-time constant (``nk.jit`` treats them as static)."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise BuildError(
                f"nk.trace({self.graph_name}): example arguments do not match "
                f"{self.graph_name}{self.signature}: {e}"
            ) from None
        b = Builder(self.graph_name)
        b.locator = _user_location
        names = _Names()
        for pname, val in bound.arguments.items():
            param = self.signature.parameters[pname]
            if pname in self.static_argnames:
                continue
            if warn_constants:
                _warn_if_constant(self.graph_name, pname, val)
            if param.kind is inspect.Parameter.VAR_POSITIONAL:
                bound.arguments[pname] = tuple(
                    _inputs(b, names, v, f"{pname}_{i}") for i, v in enumerate(val)
                )
            elif param.kind is inspect.Parameter.VAR_KEYWORD:
                bound.arguments[pname] = {k: _inputs(b, names, v, k) for k, v in val.items()}
            else:
                bound.arguments[pname] = _inputs(b, names, val, pname)
        result = self.fn(*bound.args, **bound.kwargs)
        # None is fine from a function that only updates arguments in place (cache[:, t] = k)
        returned = {} if result is None else _outputs(b, result, self.graph_name)
        outputs, aliases = _mutated_arguments(b, names, returned)
        if not outputs:
            _outputs(b, result, self.graph_name)  # the error for a function that returns nothing
        b.set_outputs(outputs, aliases)
        # outputs only there because an argument was updated in place (nk.jit drops them from
        # what it returns and writes them back into the caller's arrays instead)
        b.graph.mutation_outputs = tuple(n for n in outputs if n not in returned)
        b.graph.dce()  # values the function computed but did not return
        b.graph.verify()
        return b.graph

    def __repr__(self) -> str:
        return f"<nk.trace {self.graph_name}{self.signature}>"


_SKIP_DIRS = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (np,)) + tuple(
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), d) + os.sep
    for d in ("tensor", "ir")
)


def _user_location() -> str | None:
    """``file.py:line`` of the innermost caller outside nkigen_lite's tracer and NumPy: the
    user's line that made the op (recorded as the op's ``loc``)."""
    f = sys._getframe(1)
    while f is not None:
        path = f.f_code.co_filename
        if not path.startswith(_SKIP_DIRS) and not path.startswith("<frozen"):
            return f"{os.path.basename(path)}:{f.f_lineno}"
        f = f.f_back
    return None


class _Names:
    """Unique, sanitized graph input names in parameter order (and the traced input arrays)."""

    def __init__(self):
        self.used: set[str] = set()
        self.arrays: list[tuple[str, TracedArray]] = []  # (input name, its traced array)

    def take(self, raw: str) -> str:
        base = sanitize_hint(raw) or "arg"
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name


def _signature(fn) -> inspect.Signature:
    """``inspect.signature(fn)``; NumPy ufuncs have none before Python 3.11 / NumPy 2, so theirs
    is made from ``nin`` (``x`` or ``x1, x2, ...``), as NumPy's own text signature names them."""
    try:
        return inspect.signature(fn)
    except (ValueError, TypeError):
        if isinstance(fn, np.ufunc):
            names = ["x"] if fn.nin == 1 else [f"x{i + 1}" for i in range(fn.nin)]
            return inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names])
        raise BuildError(
            f"nk.trace: cannot read the parameters of {fn!r}; wrap it in a Python function (def f(x): ...)"
        ) from None


def _stacklevel() -> int:
    """The ``warnings`` stacklevel of the first frame outside nkigen_lite's tracer."""
    f, level = sys._getframe(1), 1
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    while f is not None and f.f_code.co_filename.startswith(_SKIP_DIRS + (pkg,)):
        f, level = f.f_back, level + 1
    return level


def _warn_if_constant(fname: str, pname: str, val) -> None:
    if isinstance(val, (bool, int, float, complex, np.generic)) and not isinstance(val, np.ndarray):
        warnings.warn(
            f"nk.trace({fname}): argument {pname!r} = {val!r} is a {type(val).__name__}, not an "
            "array, so it is a compile-time constant and the graph has no input for it; pass an "
            "array or a (shape, dtype) spec to make it an input, or name it in static_argnames",
            NkWarning,
            stacklevel=_stacklevel(),
        )


def _spec(x) -> TensorType | None:
    """The input type an example argument stands for, or None for a constant."""
    if isinstance(x, TensorType):
        return x
    if isinstance(x, np.ndarray):
        try:
            t = TensorType(x.shape, from_numpy(x.dtype))
        except BuildError as e:
            raise BuildError(f"example array of dtype {x.dtype}: {e}") from None
        if x.dtype.itemsize == 8 and x.dtype.kind in "fiu":
            warnings.warn(
                f"example array of dtype {x.dtype} becomes a {t.dtype} input (trn2 has no 64-bit types)",
                NkWarning,
                stacklevel=_stacklevel(),
            )
        return t
    if (
        isinstance(x, tuple)
        and len(x) == 2
        and isinstance(x[0], (tuple, list))
        and all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in x[0])
        and _is_dtype(x[1])
    ):
        return TensorType(tuple(int(d) for d in x[0]), dtype_arg(x[1]))
    return None


def _is_dtype(d) -> bool:
    if isinstance(d, (DType, np.dtype)) or (isinstance(d, type) and issubclass(d, np.generic)):
        return True
    if isinstance(d, str):
        try:
            dtype_arg(d)
        except (BuildError, TypeError):
            return False
        return True
    return False


def _inputs(b: Builder, names: _Names, x, raw_name: str):
    """Replace arrays / specs in an example argument by traced graph inputs."""
    try:
        t = _spec(x)
    except BuildError as e:
        raise BuildError(f"argument {raw_name!r}: {e}") from None
    if t is not None:
        name = names.take(raw_name)
        arr = TracedArray(b.add_input(name, t.shape, t.dtype))
        names.arrays.append((name, arr))
        return arr
    if isinstance(x, TracedArray):
        raise TraceError(
            f"argument {raw_name!r} is already a traced array; call the function "
            "directly inside a trace instead of tracing it again"
        )
    if isinstance(x, dict):
        return {k: _inputs(b, names, v, f"{raw_name}_{k}") for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        items = [_inputs(b, names, v, f"{raw_name}_{i}") for i, v in enumerate(x)]
        if hasattr(x, "_fields"):  # namedtuple
            return type(x)(*items)
        return type(x)(items)
    return x


def _outputs(b: Builder, result, fname: str) -> dict:
    """Name the function's result: y, (y0, y1, ...) or the dict's keys."""
    if isinstance(result, dict):
        if not result:
            raise BuildError(f"{fname} returned an empty dict; return at least one array")
        for k in result:
            if not isinstance(k, str) or not _IDENT.match(k):
                raise BuildError(
                    f"{fname} returned a dict with key {k!r}, which is not a valid "
                    "output name (an identifier [A-Za-z_][A-Za-z0-9_]*)"
                )
        items = result.items()
    elif isinstance(result, (tuple, list)):
        if not result:
            raise BuildError(f"{fname} returned an empty {type(result).__name__}")
        items = ((f"y{i}", r) for i, r in enumerate(result))
    else:
        items = (("y", result),)
    return {k: _output_value(b, r, fname, k) for k, r in items}


def _mutated_arguments(b: Builder, names: _Names, outputs: dict) -> tuple[dict, dict]:
    """Outputs and aliases once the arguments the function updated in place are added: an
    argument ``cache`` that was assigned to (``cache[:, 3] = k``) becomes an output aliasing
    input ``cache`` — the output the function returns that value under, else ``cache_out`` —
    so the compiled kernel writes that buffer in place (IO aliasing)."""
    outputs, aliases = dict(outputs), {}
    taken = set(outputs) | set(b.graph.input_names)
    for name, arr in names.arrays:
        v = arr.value
        if v is b.graph.input(name):
            continue  # not mutated
        same = [n for n, o in outputs.items() if o is v and n not in aliases]
        if same:
            aliases[same[0]] = name
            continue
        out, k = f"{name}_out", 0
        while out in taken:
            k += 1
            out = f"{name}_out{k}"
        taken.add(out)
        outputs[out] = v
        aliases[out] = name
    return outputs, aliases


def _output_value(b: Builder, r, fname: str, name: str):
    if isinstance(r, TracedArray):
        if r.builder is not b:
            raise TraceError(f"{fname}: output {name!r} is a traced array of a different trace")
        return r.value
    if isinstance(r, (bool, int, float, np.generic, np.ndarray)):
        return b.as_value(r)  # a constant output, computed in NumPy at trace time
    raise BuildError(
        f"{fname}: output {name!r} is a {type(r).__name__}, not an array; return "
        "an array, a tuple / list of arrays or a dict of arrays"
    )
