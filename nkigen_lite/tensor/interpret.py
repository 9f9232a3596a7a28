"""Tensor interpreter: the NumPy reference for tensor graphs.

``mode="faithful"`` (default) computes floats in fp32 and rounds every op's result to its
dtype, as the hardware does (bf16 sums accumulate in fp32). ``mode="float64"`` is the oracle:
floats are computed and returned in float64 without rounding; integers stay exact. Values the
program declares in a dtype are that dtype's values in both modes: constants (``full``,
``constant``, ``iota``) and explicit ``cast`` results are rounded to their dtype, as NumPy
rounds ``x.astype(bf16)`` and a weak scalar in ``x // 0.1`` (f32(0.1) for an f32 ``x``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from ..ir.dtypes import DType, cast_array, promote_types
from ..ir.errors import InterpretError
from ..ir.graph import Graph, ReturnOp
from ..ir.interpreter import Interpreter, check_inputs
from . import ops as T
from .index_bounds import check_index_inputs, index_bounds

MODES = ("faithful", "float64")


class TensorInterpreter(Interpreter):
    """Runs tensor graphs on NumPy (see module docstring for the two modes)."""

    def __init__(self, mode: str = "faithful"):
        super().__init__()
        if mode not in MODES:
            raise InterpretError(f"unknown interpreter mode {mode!r}; use one of {MODES}")
        self.mode = mode

    def compute_type(self, dtype: DType) -> np.dtype:
        """NumPy dtype an engine computes in for values of ``dtype``."""
        if dtype.is_float:
            return np.dtype(np.float64 if self.mode == "float64" else np.float32)
        return dtype.np_dtype

    def load(self, x: np.ndarray, dtype: DType) -> np.ndarray:
        """Convert a stored value to the compute type of ``dtype``."""
        return np.asarray(x).astype(self.compute_type(dtype), copy=False)

    def store(self, x, dtype: DType) -> np.ndarray:
        """Round a computed value to what a write of ``dtype`` keeps."""
        x = np.asarray(x)
        if dtype.is_float and self.mode == "float64":
            return x.astype(np.float64)
        return cast_array(x, dtype)

    def declare(self, x, dtype: DType) -> np.ndarray:
        """A value the program declares in ``dtype`` (a constant, a cast result): rounded to
        ``dtype`` in both modes (then widened to float64 in the float64 mode)."""
        r = cast_array(np.asarray(x), dtype)
        return r.astype(np.float64) if dtype.is_float and self.mode == "float64" else r


I = TensorInterpreter


@I.impl(T.UnaryOp)
def _unary(it: I, op, args):
    out_t = op.results[0].type.dtype
    in_t = op.operands[0].type.dtype
    work = out_t if out_t.is_float else in_t
    x = it.load(args[0], work)
    with np.errstate(all="ignore"):
        return [it.store(op.reference(x), out_t)]


@I.impl(T.BinaryOp)
def _binary(it: I, op, args):
    a_t, b_t = (v.type.dtype for v in op.operands)
    out_t = op.results[0].type.dtype
    if out_t.is_float or a_t.is_float or b_t.is_float:
        work = it.compute_type(out_t if out_t.is_float else promote_types(a_t, b_t))
    else:  # integers and bools: NumPy's own (unnarrowed) type, so the result is exact
        work = np.promote_types(a_t.np_dtype, b_t.np_dtype)
    a, b = np.asarray(args[0]).astype(work), np.asarray(args[1]).astype(work)
    try:
        with np.errstate(all="ignore"):
            r = op.reference(a, b)
    except ValueError as e:
        raise InterpretError(f"{op.name}: {e}") from None
    return [it.store(r, out_t)]


@I.impl(T.WhereOp)
def _where(it: I, op, args):
    out_t = op.results[0].type.dtype
    return [it.store(op.reference(args[0], it.load(args[1], out_t), it.load(args[2], out_t)), out_t)]


@I.impl(T.CastOp)
def _cast(it: I, op, args):
    return [it.declare(args[0], op.attrs["dtype"])]  # declare() is the reference cast (cast_array)


@I.impl(T.ConstantOp)
def _constant(it: I, op, _args):
    t = op.results[0].type
    value = op.reference(t.shape, op.attrs["value"])
    return [it.declare(value.astype(it.compute_type(t.dtype)), t.dtype)]


@I.impl(T.FullOp)
def _full(it: I, op, _args):
    t = op.results[0].type
    return [it.declare(op.reference(t.shape, op.attrs["value"], it.compute_type(t.dtype)), t.dtype)]


@I.impl(T.IotaOp)
def _iota(it: I, op, _args):
    t = op.results[0].type
    idx = op.reference(t.shape, op.attrs["axis"])
    return [it.declare(idx.astype(it.compute_type(t.dtype)), t.dtype)]


@I.impl(T.ReduceOp)
def _reduce(it: I, op, args):
    out_t = op.results[0].type.dtype
    in_t = op.operands[0].type.dtype
    kind, axes, keep = op.attrs["kind"], op.attrs["axes"], op.attrs["keepdims"]
    if kind in ("any", "all"):
        return [op.reference(args[0], axes, kind, keep)]
    work = out_t if out_t.is_float else in_t
    x = it.load(args[0], work)
    if kind in ("mean", "var", "std") and (in_t.is_int or in_t.is_bool):  # NumPy: float64 of the exact ints
        x = np.asarray(args[0]).astype(np.int64)
    if not out_t.is_float and kind in ("sum", "prod"):
        x = x.astype(np.int64 if in_t.is_signed or in_t.is_bool else np.uint64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean / var of an empty axis: NaN
        r = op.reference(x, axes, kind, keep, op.attrs["ddof"])
    return [it.store(r, out_t)]


@I.impl(T.MatmulOp)
def _matmul(it: I, op, args):
    out_t = op.results[0].type.dtype
    with np.errstate(all="ignore"):  # inf / NaN operands give inf / NaN, as on the chip
        return [it.store(op.reference(it.load(args[0], out_t), it.load(args[1], out_t)), out_t)]


@I.impl(T.TransposeOp)
def _transpose(_it: I, op, args):
    return [np.ascontiguousarray(op.reference(args[0], op.attrs["perm"]))]


@I.impl(T.ReshapeOp)
def _reshape(_it: I, op, args):
    return [op.reference(args[0], op.attrs["shape"]).copy()]


@I.impl(T.BroadcastToOp)
def _broadcast(_it: I, op, args):
    return [op.reference(args[0], op.attrs["shape"]).copy()]


@I.impl(T.SliceOp)
def _slice(_it: I, op, args):
    a = op.attrs
    return [op.reference(args[0], a["starts"], a["stops"], a["strides"]).copy()]


@I.impl(T.ConcatOp)
def _concat(it: I, op, args):
    out_t = op.results[0].type.dtype
    parts = [it.load(a, out_t) for a in args]
    return [it.store(op.reference(*parts, axis=op.attrs["axis"]), out_t)]


@I.impl(T.CompositeOp)
def _composite(it: I, op, args):
    """The op's expansion, run by an interpreter of the same mode."""
    g = op.expansion([v.type for v in op.operands], op.attrs)
    sub = TensorInterpreter(it.mode)
    sub.run_block(g.body, list(args))
    return [sub.env[g.outputs["y"]]]


@I.impl(T.CustomKernelOp)
def _custom_kernel(it: I, op, args):
    """The kernel's registered NumPy reference, each result stored in its declared type."""
    got = op.run_reference([np.array(a, copy=True) for a in args])
    out = []
    for a, r in zip(got, op.results):
        a = np.asarray(a)
        if a.shape != r.type.shape:
            raise InterpretError(
                f"tensor.custom_kernel {op.attrs['kernel']!r}: the reference returned shape "
                f"{list(a.shape)} for an output of type {r.type}"
            )
        out.append(it.store(a, r.type.dtype))
    return out


@I.impl(T.TopkOp)
def _topk(_it: I, op, args):
    """Values are moved, not computed: no rounding."""
    values, indices = op.reference(args[0], op.attrs["k"], op.attrs["axis"])
    return [values.copy(), indices]


@I.impl(ReturnOp, T.YieldOp)
def _return(_it: I, _op, _args):
    return None


@I.impl(T.ForLoopOp)
def _for_loop(it: I, op, args):
    """Run the body ``count`` times; the carried values are what each iteration yields."""
    k = op.attrs["carried"]
    carried, captured = list(args[:k]), list(args[k:])
    term = op.body.last
    for i in range(op.attrs["count"]):
        it.run_block(op.body, [np.array(i, np.int32), *carried, *captured])
        carried = [it.env[v] for v in term.operands]
    return carried


def run(graph: Graph, inputs: Mapping[str, np.ndarray], mode: str = "faithful") -> dict[str, np.ndarray]:
    """Run a tensor graph on NumPy; returns ``{output name: array}``. (A compiled ``Kernel``
    is run on the NKI interpreter instead, as ``kernel.run(inputs)``.)"""
    if not isinstance(graph, Graph) and hasattr(graph, "nki_source"):
        if mode != "faithful":
            raise InterpretError(
                f"nk.run(kernel, mode={mode!r}): a compiled Kernel runs on the "
                "NKI interpreter; use nk.run(graph, inputs, mode=...) for the "
                "tensor interpreter's modes"
            )
        return graph.run(inputs)
    if not isinstance(graph, Graph):
        raise InterpretError(
            f"nk.run takes a tensor Graph (or a compiled Kernel), got {type(graph).__name__}"
        )
    it = TensorInterpreter(mode)
    arrays = check_inputs(graph, inputs)
    check_index_inputs(index_bounds(graph), arrays)  # a bad index input in the user's terms
    ret = graph.return_op
    if ret is None:
        raise InterpretError(f"graph @{graph.name} has no outputs")
    args = []
    for n, v in zip(graph.input_names, graph.inputs):
        a = arrays[n]
        args.append(a.astype(np.float64) if (mode == "float64" and v.type.dtype.is_float) else a)
    with np.errstate(all="ignore"):  # IEEE results (inf, nan) are the data, not warnings
        it.run_block(graph.body, args)
    return {name: np.array(it.env[v]) for name, v in zip(ret.attrs["names"], ret.operands)}


from . import interpret_indexed  # noqa: E402, F401  (the indexed ops' rules)
