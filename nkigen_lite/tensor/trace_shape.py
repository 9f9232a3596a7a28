"""Shape and layout functions on traced arrays: transpose, reshape, squeeze, broadcast_to,
concatenate / stack / split, tril / triu, repeat, tile, flip, roll, pad and diff.

Functions that return a view in NumPy (transpose, reshape, ravel, squeeze, expand_dims,
broadcast_to, split, flip) return a traced view, so in-place updates stay sound.
"""

from __future__ import annotations

import operator

import numpy as np

from ..ir.dtypes import int32
from . import rules
from .trace_array import NOVALUE, TracedArray, TraceError, dtype_arg, memory_args
from .trace_functions import implements, require, value, view


def slices(b, v, sl: list[slice]):
    """``v[sl]`` for one Python slice per dim."""
    return b.slice(v, [s.start for s in sl], [s.stop for s in sl], [s.step for s in sl])


def _axes(what, axis, rank) -> tuple[int, ...]:
    """One axis or a sequence of axes, normalized, in the given order."""
    seq = axis if isinstance(axis, (list, tuple)) else (axis,)
    out = tuple(rules.normalize_axis(what, a, rank) for a in seq)
    require(len(set(out)) == len(out), what, f"repeated axis in {axis!r}")
    return out


@implements(np.transpose)
def transpose(b, a, axes=None):
    return view(a, b.transpose(value(b, a, "numpy.transpose"), axes))


@implements(np.matrix_transpose)
def matrix_transpose(b, x):
    v = value(b, x, "numpy.matrix_transpose")
    require(v.ndim >= 2, "numpy.matrix_transpose", f"needs rank >= 2, got shape {v.shape}")
    return view(x, b.swapaxes(v, -1, -2))


@implements(np.swapaxes)
def swapaxes(b, a, axis1, axis2):
    return view(a, b.swapaxes(value(b, a, "numpy.swapaxes"), axis1, axis2))


@implements(np.moveaxis)
def moveaxis(b, a, source, destination):
    w = "numpy.moveaxis"
    v = value(b, a, w)
    src, dst = _axes(w, source, v.ndim), _axes(w, destination, v.ndim)
    require(len(src) == len(dst), w, "source and destination need the same number of axes")
    order = [n for n in range(v.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return view(a, b.transpose(v, order))


@implements(np.reshape)
def reshape(b, a, shape, order="C", *, copy=None):
    require(order == "C", "numpy.reshape", f"order={order!r} is not supported (only 'C')")
    v = b.reshape(value(b, a, "numpy.reshape"), shape)
    return TracedArray(v) if copy else view(a, v)


@implements(np.ravel)
def ravel(b, a, order="C"):
    require(order == "C", "numpy.ravel", f"order={order!r} is not supported (only 'C')")
    return view(a, b.reshape(value(b, a, "numpy.ravel"), (-1,)))


@implements(np.expand_dims)
def expand_dims(b, a, axis):
    return view(a, b.expand_dims(value(b, a, "numpy.expand_dims"), axis))


@implements(np.squeeze)
def squeeze(b, a, axis=None):
    return view(a, b.squeeze(value(b, a, "numpy.squeeze"), axis))


@implements(np.broadcast_to)
def broadcast_to(b, array, shape, subok=False):
    memory_args("numpy.broadcast_to", subok=subok)
    v = value(b, array, "numpy.broadcast_to")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
    require(
        rules.can_broadcast_to(v.shape, shape),
        "numpy.broadcast_to",
        f"cannot broadcast shape {v.shape} to {shape}",
    )
    return view(array, b.broadcast_to(v, shape))


@implements(np.broadcast_arrays)
def broadcast_arrays(b, *args, subok=False):
    memory_args("numpy.broadcast_arrays", subok=subok)
    vals = [value(b, a, "numpy.broadcast_arrays") for a in args]
    shape = rules.broadcast_shapes("numpy.broadcast_arrays", *(v.shape for v in vals))
    return tuple(view(a, b.broadcast_to(v, shape)) for a, v in zip(args, vals))


_ATLEAST = {  # rank -> {input rank -> new shape}, as NumPy's atleast_<rank>d
    1: {0: lambda _s: (1,)},
    2: {0: lambda _s: (1, 1), 1: lambda s: (1, *s)},
    3: {0: lambda _s: (1, 1, 1), 1: lambda s: (1, *s, 1), 2: lambda s: (*s, 1)},
}


def _atleast(b, arys, rank, what):
    out = []
    for a in arys:
        v = value(b, a, what)
        grow = _ATLEAST[rank].get(v.ndim)
        out.append(view(a, b.reshape(v, grow(v.shape))) if grow else view(a, v))
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.atleast_1d)
def atleast_1d(b, *arys):
    return _atleast(b, arys, 1, "numpy.atleast_1d")


@implements(np.atleast_2d)
def atleast_2d(b, *arys):
    return _atleast(b, arys, 2, "numpy.atleast_2d")


@implements(np.atleast_3d)
def atleast_3d(b, *arys):
    return _atleast(b, arys, 3, "numpy.atleast_3d")


# ---- joining and splitting ------------------------------------------------------------------


def _joined(b, arrays, dtype, casting, what):
    require(casting == "same_kind", what, f"casting={casting!r} is not supported")
    vals = [value(b, a, what) for a in arrays]
    require(bool(vals), what, "needs at least one array")
    if dtype is not None:
        vals = [b.cast(v, dtype_arg(dtype)) for v in vals]
    return vals


@implements(np.concatenate)
def concatenate(b, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    w = "numpy.concatenate"
    require(out is None, w, "out= is not supported when tracing; assign the result")
    vals = _joined(b, arrays, dtype, casting, w)
    if axis is None:
        vals, axis = [b.reshape(v, (-1,)) for v in vals], 0
    require(all(v.ndim for v in vals), w, "zero-dimensional arrays cannot be concatenated")
    return TracedArray(b.concat(vals, axis))


@implements(np.stack)
def stack(b, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    require(out is None, "numpy.stack", "out= is not supported when tracing; assign the result")
    return TracedArray(b.stack(_joined(b, arrays, dtype, casting, "numpy.stack"), axis))


@implements(np.hstack)
def hstack(b, tup, *, dtype=None, casting="same_kind"):
    vals = _joined(b, tup, dtype, casting, "numpy.hstack")
    vals = [b.reshape(v, (1,)) if v.ndim == 0 else v for v in vals]
    return TracedArray(b.concat(vals, 0 if vals[0].ndim == 1 else 1))


@implements(np.vstack)
def vstack(b, tup, *, dtype=None, casting="same_kind"):
    vals = _joined(b, tup, dtype, casting, "numpy.vstack")
    vals = [b.reshape(v, (1, -1)) if v.ndim < 2 else v for v in vals]
    return TracedArray(b.concat(vals, 0))


def _section_bounds(what, n, sections):
    require(sections > 0, what, "number of sections must be larger than 0")
    each, extra = divmod(n, sections)
    sizes = [each + 1] * extra + [each] * (sections - extra)
    return list(np.cumsum(sizes)[:-1])


@implements(np.split)
def split(b, ary, indices_or_sections, axis=0):
    v = value(b, ary, "numpy.split")
    return [view(ary, p) for p in b.split(v, indices_or_sections, axis)]


@implements(np.array_split)
def array_split(b, ary, indices_or_sections, axis=0):
    w = "numpy.array_split"
    v = value(b, ary, w)
    if isinstance(indices_or_sections, (int, np.integer)):
        n = v.shape[rules.normalize_axis(w, axis, v.ndim)]
        indices_or_sections = [int(i) for i in _section_bounds(w, n, int(indices_or_sections))]
    return [view(ary, p) for p in b.split(v, indices_or_sections, axis)]


@implements(np.hsplit)
def hsplit(b, ary, indices_or_sections):
    v = value(b, ary, "numpy.hsplit")
    require(v.ndim >= 1, "numpy.hsplit", "only works on arrays of 1 or more dimensions")
    return split(b, ary, indices_or_sections, 1 if v.ndim > 1 else 0)


@implements(np.vsplit)
def vsplit(b, ary, indices_or_sections):
    v = value(b, ary, "numpy.vsplit")
    require(v.ndim >= 2, "numpy.vsplit", "only works on arrays of 2 or more dimensions")
    return split(b, ary, indices_or_sections, 0)


# ---- triangles, repetition, reordering -------------------------------------------------------


def _triangle(b, m, k, lower: bool, what):
    v = value(b, m, what)
    require(v.ndim >= 1, what, "needs an array of rank >= 1")
    rows, cols = (v.shape[-1], v.shape[-1]) if v.ndim == 1 else v.shape[-2:]
    k = max(-(rows + cols), min(rows + cols, operator.index(k)))
    diag = b.sub(b.iota((rows, cols), 1, int32), b.iota((rows, cols), 0, int32))
    keep = b.less_equal(diag, k) if lower else b.greater_equal(diag, k)
    zero = b.full((), False if v.dtype.is_bool else 0, v.dtype)
    return TracedArray(b.where(keep, v, zero))


@implements(np.tril)
def tril(b, m, k=0):
    return _triangle(b, m, k, True, "numpy.tril")


@implements(np.triu)
def triu(b, m, k=0):
    return _triangle(b, m, k, False, "numpy.triu")


@implements(np.repeat)
def repeat(b, a, repeats, axis=None):
    w = "numpy.repeat"
    v = value(b, a, w)
    if isinstance(repeats, TracedArray):
        raise TraceError(f"{w}: traced repeat counts give a data-dependent shape")
    if axis is None:
        v, axis = b.reshape(v, (-1,)), 0
    ax = rules.normalize_axis(w, axis, v.ndim)
    reps = np.asarray(repeats)
    if reps.ndim == 0:
        r = operator.index(reps.item())
        require(r >= 0, w, f"negative repeat count {r}")
        s = v.shape
        e = b.broadcast_to(b.reshape(v, s[: ax + 1] + (1,) + s[ax + 1 :]), s[: ax + 1] + (r,) + s[ax + 1 :])
        return TracedArray(b.reshape(e, s[:ax] + (s[ax] * r,) + s[ax + 1 :]))
    from .trace_indexing import take_static

    idx = np.repeat(np.arange(v.shape[ax]), reps)
    return TracedArray(take_static(b, v, idx, ax, "raise", w))


@implements(np.tile)
def tile(b, A, reps):
    v = value(b, A, "numpy.tile")
    reps = (operator.index(reps),) if np.ndim(reps) == 0 else tuple(operator.index(r) for r in reps)
    d = max(v.ndim, len(reps))
    shape = (1,) * (d - v.ndim) + v.shape
    reps = (1,) * (d - len(reps)) + reps
    inter = tuple(x for s in shape for x in (1, s))
    full = tuple(x for r, s in zip(reps, shape) for x in (r, s))
    e = b.broadcast_to(b.reshape(v, inter), full)
    return TracedArray(b.reshape(e, tuple(r * s for r, s in zip(reps, shape))))


@implements(np.flip)
def flip(b, m, axis=None):
    v = value(b, m, "numpy.flip")
    axes = range(v.ndim) if axis is None else _axes("numpy.flip", axis, v.ndim)
    sl = [slice(None, None, -1) if i in axes else slice(None) for i in range(v.ndim)]
    return view(m, slices(b, v, sl))


@implements(np.roll)
def roll(b, a, shift, axis=None):
    w = "numpy.roll"
    v = value(b, a, w)
    if axis is None:
        flat = roll(b, TracedArray(b.reshape(v, (-1,))), shift, 0).value
        return TracedArray(b.reshape(flat, v.shape))
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    total = {}
    for s, ax in zip(shifts.reshape(-1), axes.reshape(-1)):
        ax = rules.normalize_axis(w, int(ax), v.ndim)
        total[ax] = total.get(ax, 0) + int(s)
    for ax, s in sorted(total.items()):
        n = v.shape[ax]
        s = s % n if n else 0
        if s:
            lo, hi = b.split(v, [n - s], ax)
            v = b.concat([hi, lo], ax)
    return TracedArray(v)


@implements(np.diff)
def diff(b, a, n=1, axis=-1, prepend=NOVALUE, append=NOVALUE):
    w = "numpy.diff"
    v = value(b, a, w)
    require(v.ndim >= 1, w, "diff requires input that is at least one dimensional")
    ax = rules.normalize_axis(w, axis, v.ndim)

    def edge(extra):
        e = value(b, extra, w)
        return b.broadcast_to(e, v.shape[:ax] + (1,) + v.shape[ax + 1 :]) if e.ndim == 0 else e

    parts = [v]
    if prepend is not NOVALUE:
        parts.insert(0, edge(prepend))
    if append is not NOVALUE:
        parts.append(edge(append))
    v = b.concat(parts, ax)
    for _ in range(operator.index(n)):
        sl_hi = [slice(None)] * v.ndim
        sl_lo = [slice(None)] * v.ndim
        sl_hi[ax], sl_lo[ax] = slice(1, None), slice(None, -1)
        hi, lo = slices(b, v, sl_hi), slices(b, v, sl_lo)
        v = b.not_equal(hi, lo) if v.dtype.is_bool else b.sub(hi, lo)
    return TracedArray(v)
