"""np.pad on traced arrays, every mode but ``median``, one axis at a time:

- ``constant`` (``constant_values``: a scalar or per-axis (before, after) pairs, static) and
  ``empty`` (zeros): slabs of ``tensor.full`` concatenated around the array;
- ``edge``, ``reflect``, ``symmetric``, ``wrap``: the padded axis is the array taken at static
  source indices (NumPy's own np.pad of ``arange(n)`` gives them), which ``take_static`` turns
  into a few slices and one concat; ``reflect_type="odd"`` is refused;
- ``maximum``, ``minimum``, ``mean`` (whole-axis statistics, ``stat_length=None``) and
  ``linear_ramp`` (``end_values``: static): computed slabs broadcast along the axis.
"""

from __future__ import annotations

import numpy as np

from .trace_array import TracedArray
from .trace_functions import implements, require, value
from .trace_indexing import take_static
from .trace_ufuncs import rint

_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")
_STAT_MODES = {"maximum": "max", "minimum": "min", "mean": "mean"}
_KWARGS = {
    "constant": {"constant_values"},
    "empty": set(),
    "edge": set(),
    "reflect": {"reflect_type"},
    "symmetric": {"reflect_type"},
    "wrap": set(),
    "maximum": {"stat_length"},
    "minimum": {"stat_length"},
    "mean": {"stat_length"},
    "linear_ramp": {"end_values"},
}


def _pairs(spec, rank: int, name: str, w: str) -> list[tuple]:
    """A NumPy pad spec (scalar, pair, or per-axis pairs) as one static (before, after) pair per axis."""
    arr = np.asarray(spec)
    require(arr.dtype != object, w, f"{name} must be static numbers")
    try:
        return [tuple(p) for p in np.broadcast_to(arr, (rank, 2)).tolist()]
    except ValueError:
        raise_msg = f"{name} of shape {arr.shape} does not broadcast to ({rank}, 2)"
        require(False, w, raise_msg)
        raise


def _slab(b, v, ax: int, n: int, fill):
    return b.full(v.shape[:ax] + (n,) + v.shape[ax + 1 :], fill, v.dtype)


@implements(np.pad)
def pad(b, array, pad_width, mode="constant", **kwargs):
    w = "numpy.pad"
    require(
        isinstance(mode, str) and mode in _KWARGS,
        w,
        f"mode={mode!r} is not supported when tracing (supported: {', '.join(_KWARGS)})",
    )
    extra = sorted(set(kwargs) - _KWARGS[mode])
    require(not extra, w, f"unsupported keyword arguments {extra} for mode {mode!r}")
    v = value(b, array, w)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (v.ndim, 2))
    require(bool((widths >= 0).all()), w, "pad widths must be non-negative")
    if mode in ("reflect", "symmetric"):
        require(kwargs.get("reflect_type", "even") == "even", w, "reflect_type='odd' is not supported")
    if mode in _STAT_MODES:
        require(kwargs.get("stat_length") is None, w, "stat_length is not supported (whole-axis statistics)")
    values = _pairs(kwargs.get("constant_values", 0), v.ndim, "constant_values", w)
    ends = _pairs(kwargs.get("end_values", 0), v.ndim, "end_values", w)
    for ax, (lo, hi) in enumerate(widths.tolist()):
        if not lo and not hi:
            continue
        n = v.shape[ax]
        if mode in ("constant", "empty"):
            fills = values[ax] if mode == "constant" else (0, 0)
            parts = [_slab(b, v, ax, lo, fills[0])] if lo else []
            parts.append(v)
            parts += [_slab(b, v, ax, hi, fills[1])] if hi else []
            v = b.concat(parts, ax)
            continue
        require(n > 0, w, f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
        if mode in _INDEX_MODES:
            src = np.pad(np.arange(n), (lo, hi), mode=mode)
            v = take_static(b, v, src, ax, "raise", w)
        elif mode in _STAT_MODES:
            stat = b.reduce(v, ax, _STAT_MODES[mode], True)
            if mode == "mean" and not v.dtype.is_float:  # NumPy rounds half to even
                stat = rint(b, stat)
            stat = b.cast(stat, v.dtype)
            parts = [b.broadcast_to(stat, v.shape[:ax] + (lo,) + v.shape[ax + 1 :])] if lo else []
            parts.append(v)
            parts += [b.broadcast_to(stat, v.shape[:ax] + (hi,) + v.shape[ax + 1 :])] if hi else []
            v = b.concat(parts, ax)
        else:  # linear_ramp: from the end value to the edge, excluding the edge
            parts = []
            for side, width in ((0, lo), (1, hi)):
                if not width:
                    continue
                edge = take_static(b, v, [0 if side == 0 else n - 1], ax, "raise", w)
                t = np.arange(width, dtype=np.float64) / width  # 0 at the end value
                t = t if side == 0 else t[::-1]
                shape = [1] * v.ndim
                shape[ax] = width
                tt = b.constant(t.reshape(shape).astype(np.float32))
                end = float(ends[ax][side])
                ramp = b.add(b.mul(b.sub(b.cast(edge, "float32"), end), tt), end)
                if not v.dtype.is_float:  # NumPy's integer linspace floors
                    ramp = b.floor(ramp)
                parts.append(b.cast(ramp, v.dtype))
            pieces = ([parts[0]] if lo else []) + [v] + ([parts[-1]] if hi else [])
            v = b.concat(pieces, ax)
    return TracedArray(v)
