"""Tie-aware checks of index outputs (``tensor.topk``'s indices, ``tensor.argmax`` /
``tensor.argmin``) against a float64 reference of the operand.

An index chosen over computed floats is discontinuous at ties: NumPy's float64 ``cos(-4)``
equals ``cos(4)`` while a kernel's f32 values may differ in the last bit, so a correct kernel
may pick the other index. Comparing index outputs exactly is then a false failure; comparing
them loosely would hide a wrong index. The rule here:

- **Float operands.** Index ``j`` of a row (``topk``: rank ``j``; argmax / argmin: the one
  index) is accepted when it is in range, is not repeated in its row (topk), and the reference
  value of the operand at that index ties, within ``(rtol, atol)`` (``close_mask``'s rule), the
  reference's value at rank ``j`` — the j-th largest for topk (NaN first, as ``np.sort``), the
  maximum (minimum) for argmax (argmin; NaN counts as the extreme). A different index whose
  value is not within tolerance of the rank's value is rejected.
- **Integer and bool operands.** Exact: there is no rounding to excuse a different tie-break,
  so the index must be the reference's (the lower index of equal values).
- **topk values** must be sorted descending (NaN first), element for element
  (``check_sorted_values``): a kernel sorts its own values, so this holds exactly. Their
  closeness to the reference is the ordinary output check.

``check_index_output`` applies the rule to one output of a graph produced by one of these ops;
``index_source`` tells whether an output is such an index result, ``topk_values_axis`` whether
it is a topk's values; ``reference_env`` gives the operands' references.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..ir.dtypes import get_dtype
from ..ir.interpreter import check_inputs
from ..tensor import ops as T
from ..tensor.composites_index import ArgmaxOp, ArgminOp
from ..tensor.interpret import TensorInterpreter
from .tolerance import close_mask

INDEX_OPS = ("tensor.topk", "tensor.argmax", "tensor.argmin")


class IndexSource(NamedTuple):
    """The op behind an index output: its name, its operand, ``axis`` (normalized), ``k`` (1
    for argmax / argmin) and ``keepdims``."""

    op: str
    operand: object
    axis: int
    k: int
    keepdims: bool


def index_source(value) -> IndexSource | None:
    """The index op producing ``value`` (a topk's indices result, an argmax / argmin result),
    or None when ``value`` is anything else."""
    op = value.owner
    name = getattr(op, "name", None)
    if name not in INDEX_OPS or not hasattr(op, "results"):
        return None
    x = op.operands[0]
    if name == "tensor.topk":
        if value is not op.results[1]:
            return None
        return IndexSource(name, x, op.attrs["axis"], op.attrs["k"], True)
    axis = op.attrs["axis"] % max(x.ndim, 1)
    return IndexSource(name, x, axis, 1, bool(op.attrs["keepdims"]))


def _rows(a: np.ndarray, axis: int) -> np.ndarray:
    """``a`` with ``axis`` moved last, as a 2-d array of rows."""
    m = np.moveaxis(np.asarray(a), axis, -1)
    return m.reshape(-1, m.shape[-1]) if m.ndim else m.reshape(1, 1)


def _ranked(x_rows: np.ndarray, k: int, op: str) -> np.ndarray:
    """The reference value at each rank 0..k-1 of each row: descending with NaN first (topk,
    argmax), or the minimum with NaN first (argmin)."""
    if op == "tensor.argmin":
        key = -x_rows.astype(np.float64)
    else:
        key = x_rows.astype(np.float64)
    vals = T.TopkOp.reference(key, k, 1)[0]
    return -vals if op == "tensor.argmin" else vals


def index_mask(x_ref, got_idx, *, op: str, axis: int, k: int, dtype, rtol: float, atol: float) -> np.ndarray:
    """Per row and rank (shape ``(rows, k)``): is the chosen index acceptable under the rule of
    the module docstring? ``x_ref`` is the operand's reference, ``got_idx`` the index output
    with ``axis`` kept (size ``k``), ``dtype`` the operand's dtype."""
    xr = _rows(x_ref, axis)
    gi = _rows(got_idx, axis).astype(np.int64)
    n = xr.shape[1]
    ok = (gi >= 0) & (gi < n)
    safe = np.where(ok, gi, 0)
    picked = np.take_along_axis(xr, safe, axis=1)
    ranked = _ranked(xr, k, op)
    dt = get_dtype(dtype)
    if dt.is_float:
        ok &= close_mask(picked, ranked, dt, rtol, atol)
    else:
        ref_idx = _rows(_reference_indices(np.moveaxis(np.asarray(x_ref), axis, -1), k, op), -1)
        ok &= gi == ref_idx
    # an index may appear once per row: the later copies are wrong
    srt = np.sort(gi, axis=1, kind="stable")
    if k > 1 and (srt[:, 1:] == srt[:, :-1]).any():
        for r in np.nonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))[0]:
            _, first = np.unique(gi[r], return_index=True)
            dup = np.ones(k, bool)
            dup[first] = False
            ok[r] &= ~dup
    return ok


def _reference_indices(x_last: np.ndarray, k: int, op: str) -> np.ndarray:
    if op == "tensor.argmin":
        return T.TopkOp.reference(-x_last.astype(np.float64), k, x_last.ndim - 1)[1]
    return T.TopkOp.reference(x_last, k, x_last.ndim - 1)[1]


def sorted_mask(values, axis: int) -> np.ndarray:
    """Per row and rank: is the topk values output descending there (NaN first; rank 0 always
    passes unless a NaN follows a number)?"""
    v = _rows(values, axis).astype(np.float64)
    nan = np.isnan(v)
    ok = np.ones(v.shape, bool)
    if v.shape[1] > 1:
        prev, cur = v[:, :-1], v[:, 1:]
        with np.errstate(invalid="ignore"):
            ok[:, 1:] = np.isnan(prev) | (~nan[:, 1:] & (cur <= prev))
    return ok


def check_index_output(
    got_idx,
    x_refs,
    src: IndexSource,
    *,
    dtype,
    rtol: float,
    atol: float,
    what: str = "",
    context: str = "",
) -> None:
    """Raise AssertionError naming ``what``, the row, the rank, the index and the values when
    the index output ``got_idx`` of ``src`` breaks the rule. ``x_refs``: one reference of the
    operand, or several (the float64 and the faithful run: an index passes when it passes
    against any of them; the first one is reported); ``context`` ends the message (the graph
    and its inputs)."""
    refs = [x_refs] if isinstance(x_refs, np.ndarray) else list(x_refs)
    idx = np.asarray(got_idx)
    if not src.keepdims:
        idx = np.expand_dims(idx, src.axis)
    want_shape = tuple(src.k if d == src.axis else n for d, n in enumerate(np.shape(refs[0])))
    if idx.shape != want_shape:
        raise AssertionError(
            f"{what}: {src.op} index output of shape {tuple(np.shape(got_idx))} does not fit an "
            f"operand of shape {tuple(np.shape(refs[0]))} (axis {src.axis}, k {src.k}){context}"
        )
    kw = dict(op=src.op, axis=src.axis, k=src.k, dtype=dtype, rtol=rtol, atol=atol)
    mask = index_mask(refs[0], idx, **kw)
    for x in refs[1:]:
        mask |= index_mask(x, idx, **kw)
    label = f"{what}: {src.op} index [{get_dtype(dtype).name} operand, rtol={rtol:g}, atol={atol:g}]"
    if not mask.all():
        r, j = (int(i) for i in np.argwhere(~mask)[0])
        xr = _rows(refs[0], src.axis)
        row = _rows(idx, src.axis)[r]
        gi = int(row[j])
        ranked = float(_ranked(xr, src.k, src.op)[r, j])
        at = float(xr[r, gi]) if 0 <= gi < xr.shape[1] else None
        want = _reference_indices(np.moveaxis(np.asarray(refs[0]), src.axis, -1), src.k, src.op)
        raise AssertionError(
            f"{label}: {int((~mask).sum())} of {mask.size} indices wrong; row {r} rank {j}: got "
            f"index {gi} (reference value there {at!r}; the row's indices {row.tolist()}), "
            f"expected a distinct index whose value ties {ranked!r} (the reference picks "
            f"{want.reshape(-1, src.k)[r].tolist()}){context}"
        )


def topk_values_axis(value) -> int | None:
    """The axis of the topk whose values result is ``value``, or None for any other value."""
    op = value.owner
    if getattr(op, "name", None) == "tensor.topk" and value is op.results[0]:
        return op.attrs["axis"]
    return None


def check_sorted_values(got_values, axis: int, what: str = "") -> None:
    """Raise AssertionError naming ``what`` and the row when a topk values output is not
    sorted descending along ``axis`` (NaN first)."""
    s = sorted_mask(got_values, axis)
    if not s.all():
        r, j = (int(i) for i in np.argwhere(~s)[0])
        raise AssertionError(
            f"{what}: tensor.topk values are not sorted descending (NaN first); row {r} rank {j}: "
            f"{_rows(got_values, axis)[r].tolist()}"
        )


def reference_env(graph, inputs, mode: str = "float64") -> dict:
    """Every value of ``graph`` run on the tensor interpreter in ``mode`` (as ``nk.run``),
    keyed by Value: the operands of index ops for ``check_index_output``."""
    return _run_env(TensorInterpreter(mode), graph, inputs)


def _run_env(it: TensorInterpreter, graph, inputs) -> dict:
    arrays = check_inputs(graph, inputs)
    wide = it.mode == "float64"
    args = [
        arrays[n].astype(np.float64) if (wide and v.type.dtype.is_float) else arrays[n]
        for n, v in zip(graph.input_names, graph.inputs)
    ]
    with np.errstate(all="ignore"):  # IEEE results (inf, nan) are the data, not warnings
        it.run_block(graph.body, args)
    return it.env


def flipped_order(x_rows: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Per row of ``x_rows`` (2-d), the positions in descending order (NaN first, in index
    order) with every run of consecutive near-equal numbers (each within ``(rtol, atol)`` of
    the one before) reversed: the other way each near-tie can break."""
    x = x_rows.astype(np.float64)
    rows, n = x.shape
    order = T.TopkOp.reference(x, n, 1)[1].astype(np.int64) if n else np.zeros((rows, 0), np.int64)
    sv = np.take_along_axis(x, order, axis=1)
    new = np.ones((rows, n), bool)
    if n > 1:
        with np.errstate(invalid="ignore"):
            near = np.abs(sv[:, 1:] - sv[:, :-1]) <= atol + rtol * np.abs(sv[:, :-1])
        new[:, 1:] = ~near  # NaNs are never near: they keep their index order
    group = np.cumsum(new, axis=1)
    rank = np.broadcast_to(np.arange(n), (rows, n))
    flip = np.argsort(group * (n + 1) + (n - rank), axis=1, kind="stable")
    return np.take_along_axis(order, flip, axis=1)


class TieFlippedInterpreter(TensorInterpreter):
    """The float64 tensor interpreter with every near-tie of an index op over a float operand
    broken the other way (``flipped_order`` within ``(rtol, atol)``, ``atol`` scaled by the
    largest finite |operand|, at least 1); integer and bool operands keep the lower index."""

    def __init__(self, rtol: float, atol: float):
        super().__init__("float64")
        self.rtol, self.atol = rtol, atol

    @classmethod
    def rule_for(cls, op_class):
        for k in op_class.__mro__:
            if k in cls.rules:
                return cls.rules[k]
        return TensorInterpreter.rule_for(op_class)

    def order(self, x: np.ndarray, axis: int, is_float: bool) -> np.ndarray:
        """Positions along ``axis`` of ``x``, largest first, as rows (axis moved last)."""
        m = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis]).astype(np.float64)
        if not is_float:
            return flipped_order(m, 0.0, -1.0)  # no run is near: the lower index first
        f = np.abs(x[np.isfinite(x)]) if x.size else np.zeros(0)
        return flipped_order(m, self.rtol, self.atol * (max(1.0, float(f.max())) if f.size else 1.0))


@TieFlippedInterpreter.impl(T.TopkOp)
def _flipped_topk(it: TieFlippedInterpreter, op, args):
    x, k, axis = np.asarray(args[0]), op.attrs["k"], op.attrs["axis"]
    lead = np.moveaxis(x, axis, -1).shape[:-1]
    idx = np.moveaxis(it.order(x, axis, op.operands[0].dtype.is_float)[:, :k].reshape(lead + (k,)), -1, axis)
    return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int32)]


@TieFlippedInterpreter.impl(ArgmaxOp, ArgminOp)
def _flipped_arg(it: TieFlippedInterpreter, op, args):
    x = np.asarray(args[0])
    axis = op.attrs["axis"] % x.ndim
    key = -x.astype(np.float64) if op.name == "tensor.argmin" else x
    lead = np.moveaxis(x, axis, -1).shape[:-1]
    r = it.order(key, axis, op.operands[0].dtype.is_float)[:, 0].reshape(lead).astype(np.int32)
    return [np.expand_dims(r, axis) if op.attrs["keepdims"] else r]


def tie_flipped_env(graph, inputs, rtol: float, atol: float) -> dict:
    """``reference_env`` on ``TieFlippedInterpreter(rtol, atol)``: the third reference of
    values computed from indices, for a kernel whose rounding broke a near-tie differently
    from NumPy's float64."""
    return _run_env(TieFlippedInterpreter(rtol, atol), graph, inputs)
