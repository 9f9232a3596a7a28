"""Hypothesis strategies: random valid tensor graphs (built through ``nk.Builder``) and inputs.

    from hypothesis import given, strategies as st
    from nkigen_lite.testing.strategies import tensor_graphs, graph_inputs

    @given(st.data())
    def test_something(data):
        g = data.draw(tensor_graphs(max_ops=6, dtypes=(nk.float32, nk.bfloat16)))
        x = data.draw(graph_inputs(g))
        nk.run(g, x)

Contract of the generated graphs:
- 1-3 inputs (named ``x0``, ``x1``, ...; shapes often broadcast-compatible, every dim >= 1),
  1-2 outputs (``y0``, ``y1``), at most ``max_ops`` drawn operations; no 0-size dims.
- Domain guards: log / sqrt / rsqrt / reciprocal operands, div / floor_divide / mod
  denominators and pow bases are made >= 1 first (``abs(x) + 1`` for floats,
  ``maximum(abs(x), 1)`` for ints) unless already known positive; pow exponents are small
  Python scalars. So no NaN or division by zero comes from the graph itself (overflow still
  can, e.g. nested exp in f16). These guards, matmul / where partners (``tensor.constant``,
  a comparison for a missing condition) and the reshape that ``x[i]`` / ``x[None]`` indexing
  builds after a slice may add ops outside ``ops``.
- ``smooth=True`` keeps only ops whose results are continuous in the inputs (see
  ``SMOOTH_OPS``; no any/all reductions; casts only between floats), so two computations
  with different rounding stay within tolerance of each other: use it for differential tests.
- ``boundary_dims=True`` sometimes draws a dim from ``BOUNDARY_DIMS`` (sizes around the 128
  partitions and SBUF/PSUM tile sizes), keeping every value's size <= ``max_elements``;
  ``empty=True`` sometimes draws a 0-size dim (inputs and sources; ops then propagate it).
  Sources (``full``, ``iota``) and inputs often take another value's shape with some dims
  set to 1, so they are broadcast (size-1 → n) by their users.
  These graphs also draw the Python scalar 0.1 (not exact in any float dtype).
- ``graph_inputs(g, grid=True)`` draws floats only from the grid k/8 (|k| <= 24): exact in
  every float dtype down to e4m3, so floor / ceil / comparisons / floor_divide / mod see the
  same operands in every computation; the end-to-end properties use it.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from ..ir.dtypes import DType, bool_, cast_array, float32, int32
from ..ir.errors import BuildError
from ..ir.graph import Graph
from ..tensor import ops as T
from ..tensor.builder import Builder
from ..tensor.types import TensorType
from .strategies_indexed import INDEXED_NAMES, IndexedGen

_SOURCES = ("full", "iota", "constant")
_STRUCTURAL = (
    "where",
    "cast",
    "reduce",
    "matmul",
    "transpose",
    "reshape",
    "broadcast_to",
    "slice",
    "concat",
    "topk",
    "for_loop",
)
_FIRST = ("add", "mul", "exp", "sub", "neg")  # simple ops first: hypothesis shrinks toward them
OP_NAMES: tuple[str, ...] = _FIRST + tuple(
    n for n in (*T.BINARY_OPS, *T.UNARY_OPS, *_STRUCTURAL, *INDEXED_NAMES, *_SOURCES) if n not in _FIRST
)
_DISCONTINUOUS = {
    "floor",
    "ceil",
    "sign",
    "floor_divide",
    "mod",
    "where",
    "logical_not",
    "bitwise_not",
    "topk",
} | {n for n, c in T.BINARY_OPS.items() if c.category != "arith"}
SMOOTH_OPS: frozenset[str] = frozenset(OP_NAMES) - _DISCONTINUOUS

_GUARDED_UNARY = {"log", "sqrt", "rsqrt", "reciprocal"}
_GUARDED_DENOM = {"div", "floor_divide", "mod"}
_FLOAT_SCALARS = (2.0, 0.5, -1.5, 3.0, 0.25)
_INT_SCALARS = (2, 1, 3, -3, 5)
_POS_GRID = 24  # float inputs are k/8 for |k| <= 24, or floats in [-3, 3]
BOUNDARY_DIMS: tuple[int, ...] = (127, 128, 129, 300, 513, 4096)


def _broadcast(*shapes) -> tuple[int, ...] | None:
    rank = max(len(s) for s in shapes)
    out = []
    for k in range(rank):
        dims = {s[k - rank + len(s)] for s in shapes if k - rank + len(s) >= 0} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _infers(cls, types, attrs=None) -> bool:
    try:
        cls.infer(list(types), cls.check_attrs(attrs or {}))
        return True
    except BuildError:
        return False


class _Gen(IndexedGen):
    """State of one graph being drawn: the builder, the value pool and known-positive values."""

    def __init__(
        self,
        draw,
        dtypes,
        names,
        max_rank,
        max_dim,
        smooth,
        boundary_dims=False,
        empty=False,
        max_elements=1 << 14,
    ):
        self.draw, self.dtypes, self.names = draw, tuple(dtypes), names
        self.max_rank, self.max_dim, self.smooth = max_rank, max_dim, smooth
        self.boundary_dims, self.empty, self.max_elements = boundary_dims, empty, max_elements
        self.b = Builder("random")
        self.pool: list = []
        self.positive: set = set()

    # ---- drawing helpers ------------------------------------------------------------------
    def pick(self, values):
        return self.draw(st.sampled_from(values))

    def value(self, pred=lambda _v: True):
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        # favour recent values so graphs grow chains rather than fans
        i = self.draw(st.integers(0, len(cands) - 1))
        return cands[len(cands) - 1 - i]

    def dim(self) -> int:
        if self.boundary_dims or self.empty:
            r = self.draw(st.integers(0, 11))
            if self.empty and r == 0:
                return 0
            if self.boundary_dims and r == 1:
                return self.pick(BOUNDARY_DIMS)
        return self.draw(st.integers(1, self.max_dim))

    def shape(self, min_rank=0):
        rank = self.draw(st.integers(min_rank, max(min_rank, self.max_rank)))
        dims = [self.dim() for _ in range(rank)]
        while math.prod(dims) > self.max_elements:  # keep sizes modest: shrink the largest dim
            k = dims.index(max(dims))
            dims[k] = max(1, dims[k] // 4)
        wide = self.boundary_dims or self.empty
        if wide and self.pool and self.draw(st.integers(0, 2)) == 0:  # a broadcastable relative
            base = self.value().shape
            suffix = base[len(base) - self.draw(st.integers(0, len(base))) :]
            if len(suffix) >= min_rank:
                return tuple(1 if self.draw(st.integers(0, 2)) == 0 else d for d in suffix)
        return tuple(dims)

    def scalar(self, dt: DType):
        """A weak Python scalar that keeps ``dt`` (never zero; never negative for uints)."""
        if dt.is_bool:
            return self.pick((True, False))
        if dt.is_float and self.draw(st.booleans()):
            wide = self.boundary_dims or self.empty  # 0.1: not dyadic, rounds in every dtype
            return self.pick(_FLOAT_SCALARS + ((0.1,) if wide else ()))
        return self.pick([s for s in _INT_SCALARS if dt.is_signed or s > 0])

    def data(self, shape, dt: DType) -> np.ndarray:
        rng = np.random.default_rng(self.draw(st.integers(0, 2**16)))
        if dt.is_bool:
            return rng.random(shape) < 0.5
        if dt.is_int:
            lo = -8 if dt.is_signed else 0
            return rng.integers(lo, 9, size=shape).astype(dt.np_dtype)
        return cast_array(rng.integers(-_POS_GRID, _POS_GRID + 1, size=shape) / 8, dt)

    def add(self, v):
        # identity tests only: == on builder Values builds a tensor.equal op
        if v is not None and not any(v is p for p in self.pool):
            self.pool.append(v)
        return v

    # ---- guards ------------------------------------------------------------------------------
    def guard(self, v):
        """A value >= 1 derived from ``v`` (v itself when already known positive)."""
        if v in self.positive:
            return v
        b = self.b
        if v.dtype.is_float:
            g = b.abs(v) + 1.0
        elif v.dtype.is_signed:
            g = b.maximum(b.abs(v), 1)
        else:
            g = b.maximum(v, 1)
        self.positive.add(g)
        return g

    # ---- op families -------------------------------------------------------------------------
    def unary(self, name):
        cls = T.UNARY_OPS[name]
        guarded = name in _GUARDED_UNARY
        v = self.value(lambda v: _infers(cls, [v.type]) and not (guarded and v.dtype.is_bool))
        if v is None:
            return None
        r = self.b.unary(name, self.guard(v) if guarded else v)
        if name in ("exp", "sigmoid", "softplus"):
            self.positive.add(r)
        return r

    def binary(self, name):
        cls = T.BINARY_OPS[name]
        b = self.b
        denom = name in _GUARDED_DENOM
        a = self.value(
            lambda v: _infers(cls, [v.type, v.type]) and not (v.dtype.is_bool and (denom or name == "pow"))
        )
        if a is None:
            return None
        if name == "pow":
            base = self.guard(a)
            return b.pow(base, self.pick((2, 3, 0.5, -1.0) if base.dtype.is_float else (0, 1, 2, 3)))
        mode = self.pick(("tensor", "scalar", "rscalar", "self"))
        if mode == "self":
            other = a
        elif mode == "tensor":
            other = self.value(
                lambda v: (
                    _broadcast(a.shape, v.shape) is not None
                    and _infers(cls, [a.type, v.type])
                    and not (denom and v.dtype.is_bool)
                )
            )
            if other is None:
                return None
        else:
            other = self.scalar(a.dtype)
        if mode == "rscalar":  # Python scalar on the left; the tensor becomes the denominator
            a, other = other, a
        if denom and not isinstance(other, (bool, int, float)):
            other = self.guard(other)
        return b.binary(name, a, other)

    def where(self):
        b = self.b
        x = self.value()
        if x is None:
            return None
        y = self.value(
            lambda v: (
                _broadcast(x.shape, v.shape) is not None
                and _infers(T.WhereOp, [TensorType((), bool_), x.type, v.type])
            )
        )
        if y is None or self.draw(st.booleans()):
            y = self.scalar(x.dtype)
        ys = y.shape if not isinstance(y, (int, float)) else ()
        out = _broadcast(x.shape, ys)
        c = self.value(lambda v: v.dtype.is_bool and _broadcast(out, v.shape) is not None)
        if c is None:
            c = x if x.dtype.is_bool else b.greater(x, 0)
        if self.draw(st.booleans()):
            x, y = y, x
        return b.where(c, x, y)

    def cast(self):
        targets = [d for d in self.dtypes if d.is_float or not self.smooth]
        v = self.value(lambda v: any(d is not v.dtype for d in targets))
        if v is None:
            return None
        return self.b.cast(v, self.pick([d for d in targets if d is not v.dtype]))

    def reduce(self):
        v = self.value()
        if v is None:
            return None
        rank = v.ndim
        axes = tuple(sorted(self.draw(st.sets(st.integers(0, max(rank - 1, 0)), max_size=rank))))
        count = math.prod(v.shape[a] for a in axes)
        kinds = [
            k
            for k in T.REDUCE_KINDS
            if not (self.smooth and k in ("any", "all"))
            and not (k == "prod" and count > 8)
            and _infers(T.ReduceOp, [v.type], {"axes": axes, "kind": k})
        ]
        if not kinds:
            return None
        kind = self.pick(kinds)
        keepdims = self.draw(st.booleans())
        ddof = self.pick((0, 1)) if kind in ("var", "std") and count > 1 else 0
        style = self.pick(("tuple", "negative", "int_or_none"))
        if style == "negative":
            spec = tuple(a - rank for a in axes)
        elif style == "int_or_none" and len(axes) == 1:
            spec = axes[0]
        elif style == "int_or_none" and len(axes) == rank:
            spec = None
        else:
            spec = axes
        return self.b.reduce(v, spec, kind, keepdims, ddof)

    def matmul(self):
        a = self.value(lambda v: v.ndim >= 1 and not v.dtype.is_bool)
        if a is None:
            return None
        k = a.shape[-1]
        c = self.value(
            lambda v: (
                v.ndim >= 1
                and not v.dtype.is_bool
                and (v.shape[-2] if v.ndim >= 2 else v.shape[0]) == k
                and _broadcast(a.shape[:-2], v.shape[:-2]) is not None
            )
        )
        if c is None or self.draw(st.booleans()):
            shape = (k,) if self.draw(st.booleans()) else (k, self.dim())
            c = self.b.constant(self.data(shape, a.dtype), a.dtype)
        return a @ c

    def transpose(self):
        v = self.value(lambda v: v.ndim >= 2)
        if v is None:
            return None
        if self.draw(st.booleans()):
            return v.T
        perm = self.draw(st.permutations(range(v.ndim)))
        if self.draw(st.booleans()):
            perm = [p - v.ndim for p in perm]
        return self.b.transpose(v, perm)

    def reshape(self):
        v = self.value(lambda v: v.type.size > 0)
        if v is None:
            return None
        factors = _prime_factors(v.type.size)
        rank = self.draw(st.integers(0 if not factors else 1, self.max_rank))
        dims = [1] * rank
        for f in self.draw(st.permutations(factors)):
            dims[self.draw(st.integers(0, rank - 1))] *= f
        if dims and self.draw(st.booleans()):
            dims[self.draw(st.integers(0, rank - 1))] = -1
        return v.reshape(dims) if self.draw(st.booleans()) else self.b.reshape(v, dims)

    def broadcast_to(self):
        v = self.value(lambda v: 1 in v.shape or v.ndim < self.max_rank)
        if v is None:
            return None
        lead = self.draw(st.integers(0, max(0, self.max_rank - v.ndim)))  # v may exceed max_rank
        shape = [self.dim() for _ in range(lead)]
        shape += [self.dim() if d == 1 else d for d in v.shape]
        if math.prod(shape) > self.max_elements:
            return None
        return self.b.broadcast_to(v, shape)

    def slice(self):
        v = self.value(lambda v: v.ndim >= 1 and 0 not in v.shape)
        if v is None:
            return None
        key = [self.slice_index(n) for n in v.shape]
        if self.draw(st.booleans()):  # the builder's indexing sugar, with None and ...
            while key and key[-1] == slice(None) and self.draw(st.booleans()):
                key.pop()  # trailing full slices are implied
            if self.draw(st.booleans()):
                key.insert(self.draw(st.integers(0, len(key))), None)
            if self.draw(st.booleans()):  # may stand for zero dims
                key.insert(self.draw(st.integers(0, len(key))), Ellipsis)
            return v[tuple(key)]
        key = [slice(k, k + 1 if k != -1 else None) if isinstance(k, int) else k for k in key]
        return self.b.slice(v, [k.start for k in key], [k.stop for k in key], [k.step for k in key])

    def slice_index(self, n):
        """A non-empty Python index for a dim of size ``n``: an int, or a slice in any form."""
        if self.draw(st.integers(0, 3)) == 0:
            i = self.draw(st.integers(0, n - 1))
            return i - n if self.draw(st.booleans()) else i
        step = self.pick((1, 2, -1, 1, -2, 3))
        first = self.draw(st.integers(0, n - 1))
        room = (n - 1 - first) // step if step > 0 else first // -step
        count = self.draw(st.integers(1, room + 1))
        last = first + (count - 1) * step
        start = self.pick((first, first - n)) if first != (0 if step > 0 else n - 1) else None
        stop = last + step
        if stop >= n or stop < 0:
            stop = self.pick((None, n + 3 if step > 0 else -n - 3))
        elif self.draw(st.booleans()):
            stop -= n
        return slice(start, stop, step if step != 1 else self.pick((None, 1)))

    def concat(self):
        v = self.value(lambda v: v.ndim >= 1)
        if v is None:
            return None
        axis = self.draw(st.integers(0, v.ndim - 1))
        parts = [v]
        for _ in range(self.draw(st.integers(1, 2))):
            p = self.value(
                lambda u: (
                    u.ndim == v.ndim
                    and all(d == e for i, (d, e) in enumerate(zip(u.shape, v.shape)) if i != axis)
                    and _infers(T.ConcatOp, [v.type, u.type], {"axis": axis})
                )
            )
            parts.append(p if p is not None else v)
        return self.b.concat(parts, axis - v.ndim if self.draw(st.booleans()) else axis)

    def topk(self):
        v = self.value(lambda v: v.ndim >= 1 and 0 not in v.shape)
        if v is None:
            return None
        axis = self.draw(st.integers(-v.ndim, v.ndim - 1))
        k = self.draw(st.integers(1, min(v.shape[axis], 9)))
        values, indices = self.b.topk(v, k, axis)
        self.add(values)
        return indices

    def for_loop(self):
        """A loop of 0-3 iterations: h * 0.5 + i (floats) or h + i (int32)."""
        v = self.value(lambda v: v.dtype.is_float or v.dtype is int32)
        if v is None:
            return None
        n, b = self.draw(st.integers(0, 3)), self.b
        if v.dtype is int32:
            return b.for_loop(n, v, lambda i, h: h + i)
        return b.for_loop(n, v, lambda i, h: h * 0.5 + b.cast(i, v.dtype))

    def full(self):
        dt = self.pick(self.dtypes)
        return self.b.full(self.shape(), self.scalar(dt), dt)

    def iota(self):
        dts = [d for d in self.dtypes if not d.is_bool] or [int32]
        shape = self.shape(min_rank=1)
        return self.b.iota(shape, self.draw(st.integers(-len(shape), len(shape) - 1)), self.pick(dts))

    def constant(self):
        dt = self.pick(self.dtypes)
        return self.b.constant(self.data(self.shape(), dt), dt)

    def step(self, name):
        if name in T.UNARY_OPS:
            return self.unary(name)
        if name in T.BINARY_OPS:
            return self.binary(name)
        return getattr(self, name)()


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


@st.composite
def _graphs(
    draw,
    max_ops,
    dtypes,
    names,
    max_rank,
    max_dim,
    smooth,
    boundary_dims=False,
    empty=False,
    max_elements=1 << 14,
    max_outputs=2,
):
    gen = _Gen(draw, dtypes, names, max_rank, max_dim, smooth, boundary_dims, empty, max_elements)
    base = gen.shape()
    for i in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):  # a suffix of a common shape, some dims 1: broadcasts
            suffix = base[len(base) - draw(st.integers(0, len(base))) :]
            shape = tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in suffix)
        else:
            shape = gen.shape()
        gen.add(gen.b.add_input(f"x{i}", shape, gen.pick(gen.dtypes)))
    last = None
    for _ in range(draw(st.integers(1, max_ops))):
        r = gen.step(gen.pick(names))
        if r is not None:
            last = gen.add(r)
    outs = {"y0": last if last is not None else gen.pool[-1]}
    for k in range(1, draw(st.integers(1, max_outputs))):
        other = gen.value(lambda v: all(v is not o for o in outs.values()))
        if other is not None:
            outs[f"y{k}"] = other
    gen.b.set_outputs(outs)
    return gen.b.graph


def tensor_graphs(
    max_ops: int = 8,
    dtypes=(float32,),
    ops=None,
    max_rank: int = 3,
    max_dim: int = 8,
    *,
    smooth: bool = False,
    boundary_dims: bool = False,
    empty: bool = False,
    max_elements: int = 1 << 14,
    max_outputs: int = 2,
) -> st.SearchStrategy[Graph]:
    """Random valid tensor graphs (see the module docstring for what they contain).

    ``dtypes``: element types of inputs, sources and cast targets; ``ops``: op short names
    to draw from (``OP_NAMES``; default all, or ``SMOOTH_OPS`` with ``smooth=True``);
    ``boundary_dims`` / ``empty`` / ``max_elements``: see the module docstring;
    ``max_outputs``: 1 to that many graph outputs.
    """
    allowed = set(OP_NAMES if ops is None else ops)
    unknown = allowed - set(OP_NAMES)
    if unknown:
        raise ValueError(f"unknown op names {sorted(unknown)}; known: {', '.join(OP_NAMES)}")
    if smooth:
        allowed &= SMOOTH_OPS
    names = tuple(n for n in OP_NAMES if n in allowed)
    if not names or max_ops < 1 or max_rank < 1 or max_dim < 1 or not dtypes:
        raise ValueError("tensor_graphs needs ops, dtypes, max_ops >= 1, max_rank >= 1, max_dim >= 1")
    if max_outputs < 1 or max_elements < 1:
        raise ValueError("tensor_graphs needs max_outputs >= 1 and max_elements >= 1")
    return _graphs(
        max_ops,
        tuple(dtypes),
        names,
        max_rank,
        max_dim,
        smooth,
        boundary_dims,
        empty,
        max_elements,
        max_outputs,
    )


def _array(dt: DType, shape, positive: bool, grid: bool = False) -> st.SearchStrategy[np.ndarray]:
    size = math.prod(shape)
    if dt.is_bool:
        elems = st.booleans()
    elif dt.is_int:
        lo = 1 if positive else (-10 if dt.is_signed else 0)
        elems = st.integers(lo, 20 if not dt.is_signed else 10)
    else:
        lo = 1 if positive else -_POS_GRID
        on_grid = st.integers(lo, _POS_GRID).map(lambda k: k / 8)
        smooth = st.floats(1 / 16 if positive else -3, 3, width=32)
        elems = on_grid if grid else st.one_of(on_grid, smooth)
    if size <= 24:
        values = st.lists(elems, min_size=size, max_size=size)
        return values.map(lambda xs: cast_array(np.array(xs).reshape(shape), dt))

    def from_seed(seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        if dt.is_bool:
            return rng.random(shape) < 0.5
        if dt.is_int:
            lo = 1 if positive else (-10 if dt.is_signed else 0)
            return rng.integers(lo, 11 if dt.is_signed else 21, size=shape).astype(dt.np_dtype)
        if grid:
            return cast_array(rng.integers(1 if positive else -_POS_GRID, _POS_GRID + 1, size=shape) / 8, dt)
        x = rng.uniform(1 / 16, 3, shape) if positive else rng.uniform(-3, 3, shape)
        return cast_array(x, dt)

    return st.integers(0, 2**32 - 1).map(from_seed)


def graph_inputs(
    graph: Graph, *, positive: bool = False, grid: bool = False
) -> st.SearchStrategy[dict[str, np.ndarray]]:
    """Inputs for ``graph``: right shapes and storage dtypes; floats finite in [-3, 3]
    (``positive``: in [1/16, 3]; ``grid``: only multiples of 1/8 there), signed ints in
    [-10, 10], uints in [0, 20] (both from 1 when ``positive``), random bools."""
    parts = {n: _array(v.dtype, v.shape, positive, grid) for n, v in zip(graph.input_names, graph.inputs)}
    return st.fixed_dictionaries(parts)
