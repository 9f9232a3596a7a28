"""NumPy-like Builder for tensor graphs.

    b = nk.Builder("softmax")
    x = b.add_input("x", (256, 512), nk.float32)
    e = b.exp(x - b.max(x, axis=-1, keepdims=True))
    b.set_outputs({"y": e / b.sum(e, axis=-1, keepdims=True)})

Python scalars are weak (NEP 50): ``x + 1.0`` keeps x's float dtype. NumPy scalars and arrays
are strong. 64-bit NumPy inputs narrow to 32-bit (trn2 has no 64-bit types).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.attrs import FrozenArray
from ..ir.dtypes import (
    DType,
    bool_,
    cast_array,
    float32,
    from_numpy,
    get_dtype,
    int32,
    tfloat32,
    uint32,
    weak_scalar_dtype,
)
from ..ir.errors import BuildError
from ..ir.graph import Graph
from ..ir.op import Op
from ..ir.value import Value
from . import ops, rules
from .builder_indexed import IndexedBuilder
from .types import TensorType

Operand = Any  # Value, Python scalar, NumPy scalar or NumPy array


def _elementwise_class(table: dict, kind: str):
    """The op class in ``table`` (UNARY_OPS or BINARY_OPS) one of whose ``builder_names`` is
    ``kind``, or None."""
    cls = table.get(kind)
    if cls is not None:
        return cls
    return next((c for c in table.values() if kind in c.builder_names), None)


class Builder(IndexedBuilder):
    """Builds a tensor Graph with NumPy-named methods; see the module docstring."""

    def __init__(self, name: str = "main"):
        self.graph = Graph(name)
        self._blocks = [self.graph.body]  # where ops go (a for_loop body while it is built)
        # Called for every op appended; returns its source location (``nk.trace`` sets it to
        # name the user's Python file:line), or None.
        self.locator = None

    # ---- graph signature -----------------------------------------------------------------------
    def add_input(self, name: str, shape: Sequence[int], dtype=float32) -> Value:
        """Declare a graph input (an HBM tensor when compiled)."""
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = (int(shape),)
        try:
            t = TensorType(shape, get_dtype(dtype))
        except BuildError as e:
            raise BuildError(f"add_input {name!r}: {e}") from None
        v = self.graph.add_input(name, t)
        v._builder = self
        return v

    def set_outputs(self, outputs: dict[str, Value], aliases: dict[str, str] | None = None) -> None:
        """Name the graph outputs, e.g. ``{"y": y}``. ``aliases={"cache_out": "cache"}``
        makes an output update an input's buffer in place (same shape and dtype; the compiled
        kernel writes only the bytes that change when the output is an update of the input)."""
        if not isinstance(outputs, dict) or not outputs:
            raise BuildError("set_outputs takes a non-empty dict {name: Value}")
        for k, v in outputs.items():
            self._check_value(v, f"output {k!r}")
        self.graph.set_outputs(dict(outputs), dict(aliases or {}))

    # ---- plumbing ------------------------------------------------------------------------------
    def _check_value(self, v: Any, what: str) -> Value:
        if not isinstance(v, Value):
            raise BuildError(f"{what} must be an IR Value, got {type(v).__name__}")
        if v._builder is not self:
            raise BuildError(f"{what} ({v!r}) belongs to a different builder or graph")
        return v

    def emit(
        self,
        cls: type[Op],
        operands: Sequence[Value] = (),
        attrs: dict | None = None,
        result_types=None,
        hint: str | None = None,
    ) -> Value:
        """Append an op and return its single result."""
        op = cls(list(operands), attrs, result_types)
        if result_types is not None:  # explicit types were not inferred, so check them now
            op.verify()
        if self.locator is not None:
            op.loc = self.locator()
        self._blocks[-1].append(op)
        res = op.result
        res.name_hint = hint or cls.name.split(".", 1)[1]
        res._builder = self
        return res

    def _const_from_numpy(self, a: np.ndarray | np.generic, dtype: DType | None = None) -> Value:
        arr = np.asarray(a)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype in (np.int64, np.uint64):
            dt = from_numpy(arr.dtype)
            info = np.iinfo(dt.np_dtype)
            if arr.size and (arr.min() < info.min or arr.max() > info.max):
                raise BuildError(f"constant array does not fit in {dt.numpy_name}")
            arr = arr.astype(dt.np_dtype)
        if dtype is tfloat32:
            arr = cast_array(arr, tfloat32)
        else:
            dtype = get_dtype(arr.dtype)
        flat = np.ascontiguousarray(arr).reshape(-1)
        raw = flat.view(np.uint8).reshape(flat.size, dtype.itemsize)
        # uniform means bit-identical, so 0.0 and -0.0 (or NaN payloads) are never merged
        if flat.size and (raw == raw[0]).all() and not (dtype.is_float and np.isnan(flat[0])):
            return self.full(arr.shape, dtype.python_value(flat[0]), dtype)
        return self.emit(ops.ConstantOp, (), {"value": FrozenArray(arr, dtype)}, hint="cst")

    def as_value(self, x: Operand, like: DType | None = None) -> Value:
        """Turn an operand into a Value: Python scalars take ``like``'s dtype (weak typing)."""
        if isinstance(x, Value):
            return self._check_value(x, "operand")
        if isinstance(x, (np.ndarray, np.generic)):
            return self._const_from_numpy(x)
        if isinstance(x, (bool, int, float)):
            if like is None:
                dt = bool_ if isinstance(x, bool) else int32 if isinstance(x, int) else float32
            else:
                dt = weak_scalar_dtype(like, x)
            return self.full((), x, dt)
        raise BuildError(f"cannot use {type(x).__name__} {x!r} as a tensor operand")

    def _pair(self, op: str, a: Operand, b: Operand) -> tuple[Value, Value]:
        try:
            if isinstance(a, Value) or not isinstance(b, Value):
                va = self.as_value(a)
                return va, self.as_value(b, va.dtype)
            vb = self.as_value(b)
            return self.as_value(a, vb.dtype), vb
        except BuildError as e:
            raise BuildError(f"{op}: {e}") from None

    # ---- elementwise ---------------------------------------------------------------------------
    def unary(self, kind: str, x: Operand) -> Value:
        """Apply the elementwise unary op named ``kind`` (``"exp"``, ``"relu"``, ...)."""
        cls = _elementwise_class(ops.UNARY_OPS, kind)
        if cls is None:
            raise BuildError(f"unknown unary op {kind!r}; known: {', '.join(ops.UNARY_OPS)}")
        return self.emit(cls, [self.as_value(x)])

    def binary(self, kind: str, a: Operand, b: Operand) -> Value:
        """Apply the elementwise binary op named ``kind`` with broadcasting and promotion."""
        cls = _elementwise_class(ops.BINARY_OPS, kind)
        if cls is None:
            raise BuildError(f"unknown binary op {kind!r}; known: {', '.join(ops.BINARY_OPS)}")
        if cls.category == "compare":
            a, b = self._exact_int_scalar(a, b), self._exact_int_scalar(b, a)
        va, vb = self._pair(cls.name, a, b)
        return self.emit(cls, [va, vb])

    def composite(self, name: str, *operands: Operand, **attrs) -> Value:
        """Apply the composite op ``tensor.<name>`` (``nk.define_op``; ``b.softmax(x, axis=-1)``
        is the same call)."""
        cls = ops.COMPOSITE_OPS.get(name)
        if cls is None:
            raise BuildError(f"unknown composite op {name!r}; known: {', '.join(ops.COMPOSITE_OPS)}")
        if len(operands) != len(cls.operand_names):
            raise BuildError(
                f"{cls.name} takes {len(cls.operand_names)} operands "
                f"{list(cls.operand_names)}, got {len(operands)}"
            )
        vals = [self.as_value(x) for x in operands]
        return self.emit(cls, vals, attrs)

    def __getattr__(self, name: str):
        """Methods of elementwise ops registered after import (``b.<builder name>(...)``)."""
        if name.startswith("_"):
            raise AttributeError(name)
        cls = _elementwise_class(ops.UNARY_OPS, name)
        if cls is not None:
            return lambda x: self.unary(name, x)
        cls = _elementwise_class(ops.BINARY_OPS, name)
        if cls is not None:
            return lambda a, b: self.binary(name, a, b)
        if name in ops.COMPOSITE_OPS:
            return lambda *xs, **attrs: self.composite(name, *xs, **attrs)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _exact_int_scalar(self, s: Operand, other: Operand) -> Operand:
        """A Python int outside an integer tensor's range, as a wider (int32 or uint32)
        constant: NumPy 2 compares such ints exactly (``int8_x < 1000`` is all True)."""
        if not (
            isinstance(s, int) and not isinstance(s, bool) and isinstance(other, Value) and other.dtype.is_int
        ):
            return s
        info = np.iinfo(other.dtype.np_dtype)
        if info.min <= s <= info.max:
            return s
        for dt in (int32, uint32):
            if np.iinfo(dt.np_dtype).min <= s <= np.iinfo(dt.np_dtype).max:
                return self.full((), s, dt)
        return s

    def where(self, cond: Operand, a: Operand, b: Operand) -> Value:
        """``a`` where ``cond`` else ``b`` (non-bool conditions are tested against zero)."""
        c = self.as_value(cond)
        if c.dtype is not bool_:
            c = self.binary("not_equal", c, 0)
        va, vb = self._pair(ops.WhereOp.name, a, b)
        return self.emit(ops.WhereOp, [c, va, vb])

    def cast(self, x: Operand, dtype) -> Value:
        """Convert to ``dtype`` (float -> int truncates toward zero, like ``astype``)."""
        v = self.as_value(x)
        dt = get_dtype(dtype)
        if v.dtype is dt:
            return v
        return self.emit(ops.CastOp, [v], {"dtype": dt})

    astype = cast

    def clip(self, x: Operand, lo: Operand | None, hi: Operand | None) -> Value:
        """maximum(x, lo) then minimum(., hi); a bound of None is left out. As NumPy's
        ``np.clip``: over an integer ``x``, a Python int bound beyond the dtype's range on the
        side it clips nothing (``lo`` below the minimum, ``hi`` above the maximum) is dropped;
        one beyond it on the other side is the BuildError of the binary op."""
        v = self.as_value(x)
        if v.dtype.is_int:
            info = np.iinfo(v.dtype.np_dtype)
            if _py_int(lo) and lo <= info.min:
                lo = None
            if _py_int(hi) and hi >= info.max:
                hi = None
        if lo is not None:
            v = self.binary("maximum", v, lo)
        if hi is not None:
            v = self.binary("minimum", v, hi)
        return v

    # ---- sources ---------------------------------------------------------------------------------
    def full(self, shape: Sequence[int] | int, value, dtype=None) -> Value:
        """A tensor filled with ``value`` (dtype defaults to NumPy's choice, narrowed)."""
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        if dtype is None:
            dtype = bool_ if isinstance(value, bool) else int32 if isinstance(value, int) else float32
        dt = get_dtype(dtype)
        try:
            value = dt.python_value(value)
        except (ValueError, OverflowError):
            raise BuildError(f"tensor.full: value {value!r} cannot be stored as {dt.numpy_name}") from None
        return self.emit(ops.FullOp, (), {"value": value}, [TensorType(tuple(shape), dt)], hint="c")

    def zeros(self, shape, dtype=float32) -> Value:
        return self.full(shape, 0, dtype)

    def ones(self, shape, dtype=float32) -> Value:
        return self.full(shape, 1, dtype)

    def constant(self, value, dtype=None) -> Value:
        """A constant tensor from array data (uniform arrays become ``tensor.full``)."""
        arr = np.asarray(value)
        if dtype is None:
            return self._const_from_numpy(arr)
        dt = get_dtype(dtype)
        return self._const_from_numpy(arr.astype(dt.np_dtype), dt)

    def iota(self, shape: Sequence[int] | int, axis: int = 0, dtype=int32) -> Value:
        """Each element holds its index along ``axis``."""
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        shape = tuple(shape)
        ax = rules.normalize_axis("tensor.iota", axis, len(shape))
        return self.emit(ops.IotaOp, (), {"axis": ax}, [TensorType(shape, get_dtype(dtype))], hint="iota")

    def arange(self, n: int, dtype=int32) -> Value:
        return self.iota((n,), 0, dtype)

    def custom_kernel(self, body, inputs, outputs=None, reference=None, name: str | None = None):
        """A hand-written NKI kernel applied to ``inputs``: ``body`` is an NKI IR graph (from
        ``nk.nki.Builder``) or its text; its HBM inputs take ``inputs`` in order; ``outputs``
        names the body outputs to return (default: all, in order); ``reference`` is a NumPy
        function of the inputs returning those outputs (run by the tensor interpreter). Returns
        one Value, or a tuple for several outputs. ``name`` (default: the body's) names the
        kernel and its reference."""
        if isinstance(body, Graph):
            text, kernel = str(body), name or body.name
        elif isinstance(body, str):
            text = body
            kernel = name or ops.custom.body_graph("custom", text).name
        else:
            kind = type(body).__name__
            raise BuildError(f"custom_kernel: body must be an NKI Graph or its text, got {kind}")
        g = ops.custom.body_graph(kernel, text)
        outs = tuple(g.outputs) if outputs is None else tuple(outputs)
        if isinstance(outputs, str) or not all(isinstance(n, str) for n in outs):
            raise BuildError(f"custom_kernel {kernel!r}: outputs must be a list of names, got {outputs!r}")
        if reference is not None:
            ops.register_custom_reference(kernel, reference)
        vals = [self.as_value(x) for x in inputs]
        op = ops.CustomKernelOp(vals, {"kernel": kernel, "outputs": outs, "body": text})
        op.verify()
        if self.locator is not None:
            op.loc = self.locator()
        self.graph.body.append(op)
        for r, n in zip(op.results, outs):
            r.name_hint = n
            r._builder = self
        return op.results[0] if len(op.results) == 1 else tuple(op.results)

    def topk(self, x: Operand, k: int, axis: int = -1) -> tuple[Value, Value]:
        """The ``k`` largest elements along ``axis``, descending, and their int32 indices
        (equal values: lower index first; NaN ranks above every number): ``(values, indices)``."""
        v = self.as_value(x)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise BuildError(f"tensor.topk: k must be an integer, got {k!r}")
        if v.ndim == 0:
            raise BuildError(f"tensor.topk: the operand {v.type} must have at least one axis")
        ax = rules.normalize_axis("tensor.topk", axis, v.ndim)
        op = ops.TopkOp([v], {"k": int(k), "axis": ax})
        if self.locator is not None:
            op.loc = self.locator()
        self.graph.body.append(op)
        for r, hint in zip(op.results, ("topk_values", "topk_indices")):
            r.name_hint = hint
            r._builder = self
        return op.results[0], op.results[1]

    # ---- reductions and matmul -------------------------------------------------------------------
    def reduce(
        self, x: Operand, axis=None, kind: str = "sum", keepdims: bool = False, ddof: int = 0
    ) -> Value:
        """Reduce over ``axis`` (None = all, int or tuple, negatives allowed) with ``kind``."""
        v = self.as_value(x)
        if kind not in ops.REDUCE_KINDS:
            raise BuildError(f"tensor.reduce: unknown kind {kind!r}; known: {', '.join(ops.REDUCE_KINDS)}")
        axes = rules.normalize_axes("tensor.reduce", axis, v.ndim)
        return self.emit(
            ops.ReduceOp,
            [v],
            {"axes": axes, "kind": kind, "keepdims": bool(keepdims), "ddof": int(ddof)},
            hint=kind,
        )

    def sum(self, x, axis=None, keepdims=False):
        return self.reduce(x, axis, "sum", keepdims)

    def prod(self, x, axis=None, keepdims=False):
        return self.reduce(x, axis, "prod", keepdims)

    def max(self, x, axis=None, keepdims=False):
        return self.reduce(x, axis, "max", keepdims)

    def min(self, x, axis=None, keepdims=False):
        return self.reduce(x, axis, "min", keepdims)

    def mean(self, x, axis=None, keepdims=False):
        return self.reduce(x, axis, "mean", keepdims)

    def var(self, x, axis=None, keepdims=False, ddof=0):
        return self.reduce(x, axis, "var", keepdims, ddof)

    def std(self, x, axis=None, keepdims=False, ddof=0):
        return self.reduce(x, axis, "std", keepdims, ddof)

    def any(self, x, axis=None, keepdims=False):
        return self.reduce(x, axis, "any", keepdims)

    def all(self, x, axis=None, keepdims=False):
        return self.reduce(x, axis, "all", keepdims)

    amax, amin = max, min

    def matmul(self, a: Operand, b: Operand) -> Value:
        """NumPy matmul (batched, 1-D rules); Python scalars are rejected as in NumPy."""
        if not isinstance(a, (Value, np.ndarray)) or not isinstance(b, (Value, np.ndarray)):
            raise BuildError("tensor.matmul: operands must be tensors, not scalars")
        return self.emit(ops.MatmulOp, [self.as_value(a), self.as_value(b)])

    # ---- shape ops -----------------------------------------------------------------------------
    def transpose(self, x: Operand, axes: Sequence[int] | None = None) -> Value:
        """Permute axes (default: reverse them); negative axes allowed."""
        v = self.as_value(x)
        if axes is None:
            perm = tuple(range(v.ndim))[::-1]
        else:
            perm = tuple(rules.normalize_axis("tensor.transpose", a, v.ndim) for a in axes)
        if perm == tuple(range(v.ndim)):
            return v
        return self.emit(ops.TransposeOp, [v], {"perm": perm})

    def swapaxes(self, x: Operand, a: int, b: int) -> Value:
        v = self.as_value(x)
        perm = list(range(v.ndim))
        a = rules.normalize_axis("tensor.transpose", a, v.ndim)
        b = rules.normalize_axis("tensor.transpose", b, v.ndim)
        perm[a], perm[b] = perm[b], perm[a]
        return self.transpose(v, perm)

    def reshape(self, x: Operand, shape: Sequence[int] | int) -> Value:
        """Reshape (one dim may be -1)."""
        v = self.as_value(x)
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        shape = [int(d) for d in shape]
        if shape.count(-1) > 1:
            raise BuildError("tensor.reshape: only one dim may be -1")
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
            size = v.type.size
            if known == 0 or size % known:
                raise BuildError(f"tensor.reshape: cannot reshape {v.shape} to {tuple(shape)}")
            shape[shape.index(-1)] = size // known
        if tuple(shape) == v.shape:
            return v
        return self.emit(ops.ReshapeOp, [v], {"shape": tuple(shape)})

    def expand_dims(self, x: Operand, axis: int | Sequence[int]) -> Value:
        v = self.as_value(x)
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        rank = v.ndim + len(axes)
        axes = rules.normalize_axes("tensor.expand_dims", axes, rank)
        dims = iter(v.shape)
        return self.reshape(v, [1 if i in axes else next(dims) for i in range(rank)])

    def squeeze(self, x: Operand, axis: int | Sequence[int] | None = None) -> Value:
        v = self.as_value(x)
        if axis is None:
            axes = tuple(i for i, d in enumerate(v.shape) if d == 1)
        else:
            axes = rules.normalize_axes("tensor.squeeze", axis, v.ndim)
        for a in axes:
            if v.shape[a] != 1:
                raise BuildError(f"tensor.squeeze: axis {a} has size {v.shape[a]}, not 1")
        return self.reshape(v, [d for i, d in enumerate(v.shape) if i not in axes])

    def broadcast_to(self, x: Operand, shape: Sequence[int]) -> Value:
        v = self.as_value(x)
        shape = tuple(int(d) for d in shape)
        if shape == v.shape:
            return v
        return self.emit(ops.BroadcastToOp, [v], {"shape": shape})

    def slice(self, x: Operand, starts: Sequence, stops: Sequence, strides: Sequence | None = None) -> Value:
        """Static slice with Python semantics per dim (None, negatives and clamping allowed)."""
        v = self.as_value(x)
        if strides is None:
            strides = [None] * v.ndim
        if not len(starts) == len(stops) == len(strides) == v.ndim:
            raise BuildError(f"tensor.slice: need {v.ndim} starts, stops and strides")
        return self._slice(v, [slice(a, b, s) for a, b, s in zip(starts, stops, strides)])

    def _slice(self, v: Value, slices: list[slice]) -> Value:
        lo, hi, st = [], [], []
        for d, (s, n) in enumerate(zip(slices, v.shape)):
            if s.step == 0:
                raise BuildError(f"tensor.slice: step of dim {d} is zero")
            a, b, c = s.indices(n)
            lo.append(a)
            hi.append(b)
            st.append(c)
        if all(a == 0 and b == n and c == 1 for a, b, c, n in zip(lo, hi, st, v.shape)):
            return v
        return self.emit(ops.SliceOp, [v], {"starts": tuple(lo), "stops": tuple(hi), "strides": tuple(st)})

    def concat(self, xs: Sequence[Operand], axis: int = 0) -> Value:
        """Join tensors along ``axis`` (dtypes promote)."""
        vals = [self.as_value(x) for x in xs]
        if not vals:
            raise BuildError("tensor.concat: needs at least one tensor")
        ax = rules.normalize_axis("tensor.concat", axis, vals[0].ndim)
        if len(vals) == 1:
            return vals[0]
        return self.emit(ops.ConcatOp, vals, {"axis": ax})

    concatenate = concat

    def stack(self, xs: Sequence[Operand], axis: int = 0) -> Value:
        vals = [self.as_value(x) for x in xs]
        if not vals:
            raise BuildError("stack: needs at least one tensor")
        ax = rules.normalize_axis("stack", axis, vals[0].ndim + 1)
        return self.concat([self.expand_dims(v, ax) for v in vals], ax)

    def split(self, x: Operand, indices_or_sections, axis: int = 0) -> list[Value]:
        """NumPy split: a section count (must divide the axis) or a list of split indices."""
        v = self.as_value(x)
        ax = rules.normalize_axis("split", axis, v.ndim)
        n = v.shape[ax]
        if isinstance(indices_or_sections, (int, np.integer)):
            k = int(indices_or_sections)
            if k <= 0 or n % k:
                raise BuildError(f"split: {n} elements along axis {ax} do not split into {k} equal parts")
            bounds = [i * (n // k) for i in range(k + 1)]
        else:
            bounds = [0] + [operator.index(i) for i in indices_or_sections] + [n]
        out = []
        for a, b in zip(bounds[:-1], bounds[1:]):  # Python slice semantics, as np.split
            sl = [slice(None)] * v.ndim
            sl[ax] = slice(a, b)
            out.append(self._slice(v, sl))
        return out

    # ---- loops -------------------------------------------------------------------------------------
    def for_loop(self, n: int, carried, body):
        """Run ``body(i, *carried) -> new carried`` ``n`` times (``tensor.for_loop``; compiled to
        one on-device loop, never unrolled). ``i`` is a 0-d int32 Value; ``carried`` is a Value
        or a list of Values (the result has the same form); the body may read outer values."""
        from .loop_builder import build_for_loop

        return build_for_loop(self, n, carried, body)

    # ---- collectives (op classes in nkigen_lite/parallel/collective_ops.py) --------------------
    def _collective(self, short: str, x: Operand, world: int, **attrs) -> Value:
        name = f"tensor.{short}"
        cls = ops.TENSOR_OPS.get(name)
        if cls is None:
            raise BuildError(f"{name}: import nkigen_lite.parallel to register the collectives")
        v = self.as_value(x)
        for k in ("axis", "split_axis", "concat_axis"):
            if k in attrs:
                attrs[k] = rules.normalize_axis(name, attrs[k], v.ndim)
        if "op" in attrs and attrs["op"] not in ("sum", "max", "min"):
            raise BuildError(f"{name}: unknown reduction op {attrs['op']!r}; use sum, max or min")
        return self.emit(cls, [v], {"world": world, **attrs})

    def all_reduce(self, x: Operand, op: str = "sum", *, world: int) -> Value:
        """Every rank of the ``world`` ranks gets the sum / max / min over all ranks of ``x``."""
        return self._collective("all_reduce", x, world, op=op)

    def all_gather(self, x: Operand, axis: int, *, world: int) -> Value:
        """Every rank gets all ranks' ``x`` concatenated along ``axis`` in rank order."""
        return self._collective("all_gather", x, world, axis=axis)

    def reduce_scatter(self, x: Operand, axis: int, op: str = "sum", *, world: int) -> Value:
        """Rank r gets block r along ``axis`` of the reduction of all ranks' ``x``."""
        return self._collective("reduce_scatter", x, world, axis=axis, op=op)

    def all_to_all(self, x: Operand, split_axis: int, concat_axis: int, *, world: int) -> Value:
        """Rank r gets block r along ``split_axis`` of every rank's ``x``, concatenated along
        ``concat_axis`` in rank order."""
        return self._collective("all_to_all", x, world, split_axis=split_axis, concat_axis=concat_axis)

    # ---- operator protocol used by Value -------------------------------------------------------
    def value_operator(self, name: str, a: Any, b: Any = None) -> Value:
        if name == "matmul":
            return self.matmul(a, b)
        if name == "neg":
            return self.unary("neg", a)
        if name == "abs":
            return self.unary("abs", a)
        if name == "invert":
            v = self.as_value(a)
            return self.unary("logical_not" if v.dtype is bool_ else "bitwise_not", v)
        if name == "T":
            return self.transpose(a)
        if name == "astype":
            return self.cast(a, b)
        if name == "reshape":
            shape = b[0] if len(b) == 1 and not isinstance(b[0], (int, np.integer)) else b
            return self.reshape(a, shape)
        return self.binary(name, a, b)

    def value_getitem(self, v: Value, key) -> Value:
        """Basic NumPy indexing: ints, slices, None and Ellipsis."""
        if not isinstance(key, tuple):
            key = (key,)
        if sum(k is Ellipsis for k in key) > 1:
            raise BuildError("an index can only have a single ellipsis ('...')")
        n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
        if n_real > v.ndim:
            raise BuildError(f"too many indices for a tensor of rank {v.ndim}")
        if any(k is Ellipsis for k in key):  # identity: == on a Value would build an op
            i = next(n for n, k in enumerate(key) if k is Ellipsis)
            key = key[:i] + (slice(None),) * (v.ndim - n_real) + key[i + 1 :]
        else:
            key = key + (slice(None),) * (v.ndim - n_real)
        slices, out_shape, dim = [], [], 0
        for k in key:
            if k is None:
                out_shape.append(1)
                continue
            n = v.shape[dim]
            if isinstance(k, slice):
                if k.step == 0:
                    raise BuildError(f"tensor.slice: step of dim {dim} is zero")
                slices.append(k)
                out_shape.append(len(range(*k.indices(n))))
            elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
                i = operator.index(k)
                if not -n <= i < n:
                    raise BuildError(f"index {i} is out of bounds for axis {dim} with size {n}")
                i %= n
                slices.append(slice(i, i + 1))
            else:
                raise BuildError(
                    f"unsupported index {k!r}: only ints, slices, None and ... are supported; "
                    "use gather/take_along_axis for tensor indices"
                )
            dim += 1
        return self.reshape(self._slice(v, slices), out_shape)


def _add_elementwise_methods() -> None:
    """One Builder method per ``builder_names`` entry of every elementwise op class defined at
    import (ops registered later are reached through ``Builder.__getattr__``)."""
    for cls in ops.UNARY_OPS.values():
        for alias in cls.builder_names:
            setattr(Builder, alias, _unary_method(cls.short_name(), alias, cls.__doc__))
    for cls in ops.BINARY_OPS.values():
        for alias in cls.builder_names:
            setattr(Builder, alias, _binary_method(cls.short_name(), alias, cls.__doc__))


def _unary_method(short: str, alias: str, doc: str | None):
    def method(self, x):
        return self.unary(short, x)

    method.__name__, method.__doc__ = alias, doc
    return method


def _binary_method(short: str, alias: str, doc: str | None):
    def method(self, a, b):
        return self.binary(short, a, b)

    method.__name__, method.__doc__ = alias, doc
    return method


_add_elementwise_methods()


def _py_int(x) -> bool:
    """A Python int (weak, NEP 50), not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)
