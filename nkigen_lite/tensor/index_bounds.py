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
        put = _put_along_axis(ids, inputs, n)
        if put is not None and name == "tensor.scatter_rows":
            src, m, signed = put
            axis = _axis_of_size(table, m)
            lo = -m if signed else 0
            return [IndexBound(src, name, "np.put_along_axis", axis, m, lo, m - 1, loc=loc)]
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


def _put_along_axis(ids, inputs, total):
    """``(input, n, signed)`` when ``ids`` is np.put_along_axis's flat positions:
    ``where((r >= -n) & (r < n), ..., total)`` (or ``where(r < n, ..., total)`` for uint32 r)."""
    while _op(ids, "tensor.reshape") is not None:
        ids = ids.owner.operands[0]
    where = _op(ids, "tensor.where")
    if where is None or _const(where.operands[2]) != total:
        return None
    cond = where.operands[0]
    both = _op(cond, "tensor.logical_and")
    if both is not None:
        ge, lt = _op(both.operands[0], "tensor.greater_equal"), _op(both.operands[1], "tensor.less")
        if ge is None or lt is None or ge.operands[0] is not lt.operands[0]:
            return None
        n = _const(lt.operands[1])
        if n is None or _const(ge.operands[1]) != -n:
            return None
        r, signed = lt.operands[0], True
    else:
        lt = _op(cond, "tensor.less")
        if lt is None or not (_const(lt.operands[1]) or 0) > 0:
            return None
        r, n, signed = lt.operands[0], _const(lt.operands[1]), False
    src = _input_of(r, inputs, int(n))
    return None if src is None else (src[0], int(n), signed)


def _table_axis(table) -> int:
    """The axis of the user's array a gather's table rows run along (np.take(x, ids, axis)
    moves ``axis`` to the front with a transpose)."""
    op = _op(table, "tensor.transpose")
    return int(op.attrs["perm"][0]) if op is not None else 0


def _axis_of_size(table, n):
    """np.put_along_axis scatters into the reshaped array: its one axis of size ``n``, if unique."""
    op = _op(table, "tensor.reshape")
    if op is None:
        return None
    dims = [d for d, s in enumerate(op.operands[0].type.shape) if s == n]
    return dims[0] if len(dims) == 1 else None
