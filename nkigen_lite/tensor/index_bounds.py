"""Index bounds of kernel inputs: which graph inputs are indices, and the range each must be in.

An indexed tensor op (gather_rows, scatter_rows, take_along_axis, dynamic_slice,
dynamic_update_slice) whose index operand is a graph input — directly, or through ops that
keep every value (reshape, broadcast_to, transpose, expand_dims, squeeze, a widening integer
cast) and the ``where(i < 0, min(i, 0) + n, i)`` that ``@nk.trace`` adds for NumPy's negative
indices, or ``np.put_along_axis``'s ``where((i >= -n) & (i < n), ...)`` — gives an
``IndexBound``: the input, the op, the axis and size, and the values allowed. ``check`` tests
the user's arrays in NumPy before a kernel runs, so an index out of range is reported in the
user's terms (the value, its position in the index array, the axis and its size) on every run
path (``nk.run``, ``Kernel.run`` / ``Kernel(...)``, ``nk.simulate``) instead of as a flattened
offset of a view the lowering made. Indices computed inside the graph are not covered here:
the interpreters' own bounds checks (never loosened) report them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir.errors import IndexOutOfRange

KEEP_VALUES = (
    "tensor.reshape",
    "tensor.broadcast_to",
    "tensor.transpose",
    "tensor.expand_dims",
    "tensor.squeeze",
)

LABELS = {
    "tensor.gather_rows": "x[ids] / np.take",
    "tensor.scatter_rows": "x[ids] = v",
    "tensor.take_along_axis": "np.take_along_axis, or np.take / x[:, ids] over few rows",
    "tensor.dynamic_slice": "x[i]",
    "tensor.dynamic_update_slice": "x[i] = v",
}
"""The NumPy spelling that traces to each indexed tensor op (the message names both)."""


@dataclass(frozen=True)
class IndexBound:
    """Input ``input`` indexes ``axis`` (size ``size``) of ``op``: values in ``[lo, hi]``, and
    for a window of ``window`` > 1 with negative starts (``wrapped``) also ``v <= -window``."""

    input: str
    op: str
    label: str
    axis: int | None
    size: int
    lo: int
    hi: int
    window: int = 1
    loc: str | None = None

    def bad(self, a: np.ndarray) -> np.ndarray:
        """Mask of the values of ``a`` this bound rejects."""
        v = np.asarray(a).astype(np.int64)
        bad = (v < self.lo) | (v > self.hi)
        if self.window > 1 and self.lo < 0:  # a negative start counts from the end
            bad |= (v < 0) & (v > -self.window)
        return bad

    def check(self, a: np.ndarray) -> None:
        """Raise IndexOutOfRange naming the first value of ``a`` out of range."""
        bad = self.bad(a)
        if not bad.any():
            return
        pos = tuple(int(k) for k in np.argwhere(bad)[0])
        value = int(np.asarray(a)[pos])
        raise IndexOutOfRange(self.message(value, pos))

    def message(self, value: int, pos: tuple) -> str:
        axis = f"axis {self.axis}" if self.axis is not None else "an axis"
        where = f"{self.input}[{', '.join(map(str, pos))}]" if pos else self.input
        at = f"; at {self.loc}" if self.loc else ""
        if self.window == 1:
            rule = f"index {value} is out of bounds for {axis} with size {self.size}"
            allowed = f"[{self.lo}, {self.hi + 1})"
        else:
            rule = (
                f"start {value} is out of bounds for {axis} with size {self.size}: a window of "
                f"{self.window} needs a start in [0, {self.hi}]"
            )
            allowed = f"[0, {self.hi}]" + (f" or [{self.lo}, {-self.window}]" if self.lo < 0 else "")
        return f"{self.op}: {rule} ({self.label}; index input {where}; allowed {allowed}{at})"


def index_bounds(graph) -> tuple[IndexBound, ...]:
    """The IndexBounds of ``graph``'s inputs, in op order (deterministic; no duplicates)."""
    inputs = {id(v): n for n, v in zip(graph.input_names, graph.inputs)}
    out: list[IndexBound] = []
    for op in graph.body:  # top level only: a loop body's indices are block arguments
        for b in _op_bounds(op, inputs):
            if b not in out:
                out.append(b)
    return tuple(out)


def check_index_inputs(bounds, arrays: dict) -> None:
    """Raise IndexOutOfRange for the first bound an array in ``arrays`` breaks."""
    for b in bounds:
        a = arrays.get(b.input)
        if a is not None and a.size:
            b.check(a)


def _op_bounds(op, inputs):
    name = op.name
    if name not in LABELS:
        return []
    loc = op.loc if isinstance(op.loc, str) else None
    label = LABELS[name]
    if name == "tensor.take_along_axis":
        x, idx = op.operands
        axis = op.attrs["axis"]
        n = x.type.shape[axis]
        src = _input_of(idx, inputs, n)
        if src is None:
            return []
        return [IndexBound(src[0], name, label, axis, n, -n, n - 1, loc=loc)]
    if name in ("tensor.gather_rows", "tensor.scatter_rows"):
        table, ids = op.operands[0], op.operands[1]
        n = table.type.shape[0]
        checked = _range_checked(ids, inputs, n)
        if checked:  # flat positions: np.put_along_axis, x[i, j] with several index arrays
            what = "np.put_along_axis" if name == "tensor.scatter_rows" else "x[i, j] (several index arrays)"
            out = []
            for src, m, signed, stride in checked:
                axis = _flattened_axis(table, m, stride)
                out.append(IndexBound(src, name, what, axis, m, -m if signed else 0, m - 1, loc=loc))
            return out
        src = _input_of(ids, inputs, n)
        if src is None:
            return []
        input_name, wrapped = src
        lo = -n if wrapped else 0
        return [IndexBound(input_name, name, label, _table_axis(table), n, lo, n - 1, loc=loc)]
    # dynamic_slice (x, *starts) / dynamic_update_slice (x, update, *starts)
    x = op.operands[0]
    first = 1 if name == "tensor.dynamic_slice" else 2
    sizes = op.attrs["sizes"] if name == "tensor.dynamic_slice" else op.operands[1].type.shape
    out = []
    for d, s in enumerate(op.operands[first:]):
        n, w = x.type.shape[d], sizes[d]
        src = _input_of(s, inputs, n)
        if src is not None:
            lo = -n if src[1] else 0
            out.append(IndexBound(src[0], name, label, d, n, lo, n - w, window=w, loc=loc))
    return out


def _input_of(v, inputs, n):
    """``(input name, wrapped)`` when ``v`` holds a graph input's values (``wrapped``: negative
    ones counted from the end of an axis of ``n``), else None."""
    wrapped = False
    while True:
        name = inputs.get(id(v))
        if name is not None:
            return name, wrapped
        op = v.owner
        if op is None or not hasattr(op, "operands"):
            return None
        if op.name in KEEP_VALUES:
            v = op.operands[0]
        elif op.name == "tensor.cast" and _widens(op.operands[0].type.dtype, v.type.dtype):
            v = op.operands[0]
        elif not wrapped and _wrap_of(op, n) is not None:
            v, wrapped = _wrap_of(op, n), True
        else:
            return None


def _widens(src, dst) -> bool:
    """A cast from ``src`` to ``dst`` keeps every integer value."""
    if not (src.is_int and dst.is_int) or src.is_bool or dst.is_bool:
        return False
    a, b = np.iinfo(src.np_dtype), np.iinfo(dst.np_dtype)
    return b.min <= a.min and a.max <= b.max


def _const(v):
    op = v.owner
    if op is not None and getattr(op, "name", None) == "tensor.full" and v.type.rank == 0:
        return op.attrs["value"]
    return None


def _op(v, name):
    op = v.owner
    return op if op is not None and getattr(op, "name", None) == name else None


def _wrap_of(op, n):
    """``r`` when ``op`` is ``where(r < 0, minimum(r, 0) + n, r)``, else None."""
    if op.name != "tensor.where":
        return None
    cond, a, r = op.operands
    less, add = _op(cond, "tensor.less"), _op(a, "tensor.add")
    if less is None or add is None or less.operands[0] is not r or _const(less.operands[1]) != 0:
        return None
    mn = _op(add.operands[0], "tensor.minimum")
    if mn is None or mn.operands[0] is not r or _const(mn.operands[1]) != 0 or _const(add.operands[1]) != n:
        return None
    return r


def _range_checked(ids, inputs, total):
    """``[(input, n, signed, stride)]`` when ``ids`` are flat row-major positions built by
    ``@nk.trace`` (np.put_along_axis, several index arrays): ``where(ok, flat, total)`` with
    ``ok`` a logical_and of ``(r >= -n) & (r < n)`` (``r < n`` for uint32 r), one per index
    input ``r`` whose wrapped value enters ``flat`` times ``stride``; else []."""
    while _op(ids, "tensor.reshape") is not None:
        ids = ids.owner.operands[0]
    where = _op(ids, "tensor.where")
    if where is None or _const(where.operands[2]) != total:
        return []
    out = []
    for r, n, signed in _checks(where.operands[0]):
        src = _input_of(r, inputs, n)
        stride = _stride_of(where.operands[1], r, n)
        if src is not None and stride is not None:
            out.append((src[0], n, signed, stride))
    return out


def _checks(cond):
    """The ``(r, n, signed)`` range checks ``cond`` is the logical_and of."""
    while _op(cond, "tensor.broadcast_to") is not None:
        cond = cond.owner.operands[0]
    both = _op(cond, "tensor.logical_and")
    if both is not None:
        ge, lt = _op(both.operands[0], "tensor.greater_equal"), _op(both.operands[1], "tensor.less")
        if ge is not None and lt is not None and ge.operands[0] is lt.operands[0]:
            n = _const(lt.operands[1])
            if n is not None and _const(ge.operands[1]) == -n:
                return [(lt.operands[0], int(n), True)]
        return _checks(both.operands[0]) + _checks(both.operands[1])
    lt = _op(cond, "tensor.less")
    if lt is not None and (_const(lt.operands[1]) or 0) > 0:
        return [(lt.operands[0], int(_const(lt.operands[1])), False)]
    return []


def _stride_of(expr, r, n, depth=0):
    """The multiplier of ``r`` (wrapped for an axis of ``n``, possibly cast) in the flat
    position ``expr`` (adds of terms ``c`` or ``c * stride``), or None."""
    if depth > 12:
        return None
    if expr is r:
        return 1
    op = expr.owner
    name = getattr(op, "name", None)
    if name in ("tensor.broadcast_to", "tensor.cast"):
        return _stride_of(op.operands[0], r, n, depth + 1)
    if name == "tensor.where" and _wrap_of(op, n) is r:
        return 1
    if name == "tensor.add":
        for a in op.operands:
            got = _stride_of(a, r, n, depth + 1)
            if got is not None:
                return got
        return None
    if name == "tensor.mul" and _const(op.operands[1]) is not None:
        got = _stride_of(op.operands[0], r, n, depth + 1)
        return None if got is None else got * int(_const(op.operands[1]))
    return None


def _table_axis(table) -> int:
    """The axis of the user's array a gather's table rows run along (np.take(x, ids, axis)
    moves ``axis`` to the front with a transpose)."""
    op = _op(table, "tensor.transpose")
    return int(op.attrs["perm"][0]) if op is not None else 0


def _flattened_axis(table, n, stride):
    """The axis of the user's array an index of an axis of ``n`` with row-major ``stride``
    runs along, when ``table`` is ``reshape(x)`` or ``reshape(transpose(x, perm))``; else None."""
    op = _op(table, "tensor.reshape")
    if op is None:
        return None
    src = op.operands[0]
    perm = None
    tr = _op(src, "tensor.transpose")
    if tr is not None:
        perm, src = list(tr.attrs["perm"]), tr.operands[0]
    shape = [src.type.shape[p] for p in perm] if perm else list(src.type.shape)
    total = table.type.shape[0]
    k, size = 0, 1
    while k < len(shape) and size < total:  # the leading dims flattened into the rows
        size *= shape[k]
        k += 1
    for j in range(k):
        if shape[j] == n and math.prod(shape[j + 1 : k]) == stride:
            return perm[j] if perm else j
    return None


def explain_flat(op, env) -> str | None:
    """For a gather_rows / scatter_rows whose ids are trace-built flat positions
    (``where(range checks, flat, total)``) and out of range: the first index out of its axis, from
    the values the interpreter holds (``env``), in the user's terms — ``index 99 is out of bounds
    for axis 1 with size 16 (at position [2] of the index ...)`` — instead of the row ``total``
    it was flattened to; None when the ids are not such positions."""
    table, ids = op.operands[0], op.operands[1]
    total = table.type.shape[0]
    v = ids
    while _op(v, "tensor.reshape") is not None:
        v = v.owner.operands[0]
    where = _op(v, "tensor.where")
    if where is None or _const(where.operands[2]) != total:
        return None
    shape = tuple(where.results[0].type.shape)
    for r, n, signed in _checks(where.operands[0]):
        vals = env.get(r)
        stride = _stride_of(where.operands[1], r, n)
        if vals is None or stride is None:
            continue
        a = np.broadcast_to(np.asarray(vals).astype(np.int64), shape)
        bad = (a < (-n if signed else 0)) | (a >= n)
        if bad.any():
            pos = [int(k) for k in np.argwhere(bad)[0]]
            axis = _flattened_axis(table, n, stride)
            axis_text = f"axis {axis}" if axis is not None else "an axis"
            return (
                f"{op.name}: index {int(a[tuple(pos)])} is out of bounds for {axis_text} with size {n} "
                f"(at position {pos} of the index; allowed [{-n if signed else 0}, {n}))"
            )
    return None
