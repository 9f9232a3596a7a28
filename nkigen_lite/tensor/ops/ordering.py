"""Ordering tensor ops: topk (the k largest along an axis, with their indices).

``tensor.topk`` has two results, ``values`` and ``indices``. On trn2 the lowering runs it on
the max8 / find_index8 / match_replace8 instructions (transforms/lower/topk.py) when it can;
decompose rewrites every other instance into k selection rounds of existing ops (its
``expansion``: a max reduction, the lowest index reaching it, that element masked out).
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import INT, Attr
from ...ir.dtypes import bool_, int32
from ...ir.errors import BuildError
from ...ir.graph import Graph
from ...ir.traits import Pure
from ..types import TensorType
from .base import Needs, TensorOp, tensor_types


def topk_reference(x, k, axis):
    """The k largest elements along ``axis`` in descending order and their int32 indices; equal
    values keep ascending index order (NumPy's stable sort); NaN ranks above every number (as in
    ``np.sort``), NaNs among themselves by index."""
    a = np.asarray(x)
    key = a.astype(np.float64) if a.dtype != np.float64 else a
    isnan = np.isnan(key)
    neg = np.where(isnan, 0.0, -key)
    order = np.lexsort((neg, ~isnan), axis=axis) if a.ndim else np.zeros((), np.int64)
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(a, idx, axis=axis), idx.astype(np.int32)


class TopkOp(TensorOp):
    """The k largest along ``axis``, descending, and their int32 indices (ties: lower index)."""

    name = "tensor.topk"
    traits = frozenset({Pure})
    attr_spec = (Attr("k", INT), Attr("axis", INT))
    reference = staticmethod(topk_reference)
    numpy = "x sorted descending along axis (stable; NaN first), first k; indices: that order"
    dtype_doc = "values: operand dtype; indices: int32"
    builder_names = ("topk",)
    needs = Needs("ordering", None)  # native via transforms/lower/topk.py, else expanded

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        (x,) = tensor_types(cls.name, types, 1)
        k, axis = attrs["k"], attrs["axis"]
        if x.rank == 0:
            raise BuildError(f"{cls.name}: the operand {x} must have at least one axis")
        if not 0 <= axis < x.rank:
            raise BuildError(f"{cls.name}: axis {axis} is out of range for {x}")
        n = x.shape[axis]
        if not 1 <= k <= n:
            raise BuildError(f"{cls.name}: k={k} must be in [1, {n}] (the length of axis {axis} of {x})")
        shape = tuple(k if d == axis else s for d, s in enumerate(x.shape))
        return [TensorType(shape, x.dtype), TensorType(shape, int32)]

    @classmethod
    def expansion(cls, types, attrs) -> Graph:
        """The op as k selection rounds of existing ops: a graph with input ``x`` and outputs
        ``values`` and ``indices``. Round r takes the maximum of the elements still in play (a
        NaN in play wins), the lowest index holding it, and takes that element out of play."""
        from ..builder import Builder

        (t,) = tensor_types(cls.name, types, 1)
        cls.infer(types, attrs)
        k, axis = attrs["k"], attrs["axis"]
        n = t.shape[axis]
        b = Builder("topk")
        x = b.add_input("x", t.shape, t.dtype)
        work = b.cast(x, int32) if t.dtype is bool_ else x
        is_float = work.dtype.is_float
        lowest = float("-inf") if is_float else int(np.iinfo(work.dtype.np_dtype).min)
        idx = b.iota(t.shape, axis, int32)
        isnan = b.not_equal(work, work) if is_float else None
        finite = b.where(isnan, lowest, work) if is_float else work
        alive = None
        vals, inds = [], []
        for _ in range(k):
            cand = finite if alive is None else b.where(alive, finite, lowest)
            m = b.reduce(cand, axis, "max", True)
            hit = b.equal(cand, m)
            if is_float:
                nan_in_play = isnan if alive is None else b.logical_and(alive, isnan)
                any_nan = b.reduce(nan_in_play, axis, "any", True)
                hit = b.where(any_nan, nan_in_play, hit)
                m = b.where(any_nan, float("nan"), m)
            if alive is not None:
                hit = b.logical_and(alive, hit)
            i = b.reduce(b.where(hit, idx, n), axis, "min", True)
            out = b.not_equal(idx, i)
            alive = out if alive is None else b.logical_and(alive, out)
            vals.append(m)
            inds.append(i)
        values = vals[0] if k == 1 else b.concat(vals, axis)
        indices = inds[0] if k == 1 else b.concat(inds, axis)
        b.set_outputs({"values": b.cast(values, t.dtype), "indices": indices})
        return b.graph
