"""Shape and dtype inference rules with NumPy semantics (64-bit results narrowed to 32-bit).

For dtypes NumPy defines natively, the result dtype is whatever NumPy computes for the same
ufunc; for bf16 / fp8 / tf32 (which NumPy's promotion does not fully cover) the rules below
say the same thing NumPy says for its own floats.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ..ir.dtypes import DType, bool_, float32, from_numpy, promote_types
from ..ir.errors import BuildError


def broadcast_shapes(op: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy broadcasting of several shapes; raises BuildError naming the clashing dim."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        dim = 1
        for s in shapes:
            i = len(s) - rank + k
            if i < 0:
                continue
            d = s[i]
            if d == 1 or d == dim:
                continue
            if dim != 1:
                shown = " and ".join(str(tuple(x)) for x in shapes)
                raise BuildError(f"{op}: shapes {shown} do not broadcast (dim {k - rank}: {dim} vs {d})")
            dim = d
        out.append(dim)
    return tuple(out)


def can_broadcast_to(src: Sequence[int], dst: Sequence[int]) -> bool:
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(src[::-1], dst[::-1]))


def normalize_axis(op: str, axis: int, rank: int) -> int:
    """Map a possibly negative axis into [0, rank); raises BuildError when out of range."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise BuildError(f"{op}: axis must be an integer, got {axis!r}")
    a = int(axis)
    if not -rank <= a < rank:
        raise BuildError(f"{op}: axis {a} is out of range for rank {rank}")
    return a % rank if rank else 0


def normalize_axes(op: str, axes, rank: int) -> tuple[int, ...]:
    """None -> all axes; int or sequence -> sorted unique non-negative axes."""
    if axes is None:
        return tuple(range(rank))
    if not isinstance(axes, (list, tuple, range)):
        axes = (axes,)  # a single axis; normalize_axis rejects anything but an integer
    out = [normalize_axis(op, a, rank) for a in axes]
    if len(set(out)) != len(out):
        raise BuildError(f"{op}: repeated axis in {tuple(axes)}")
    return tuple(sorted(out))


def _numpy_dtype(op: str, fn: Callable, *dtypes: DType) -> DType:
    args = [np.ones((1,), d.np_dtype) for d in dtypes]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = fn(*args)
    except TypeError:
        names = ", ".join(d.numpy_name for d in dtypes)
        raise BuildError(f"{op}: not defined for dtype {names} (NumPy rejects it too)") from None
    return from_numpy(np.asarray(out).dtype)


def unary_dtype(op: str, ufunc: Callable | None, float_only: bool, x: DType) -> DType:
    """Result dtype of an elementwise unary op."""
    if float_only:
        if x.is_float:
            return x
        return _numpy_dtype(op, np.exp, x)
    if x.is_native_numpy:
        return _numpy_dtype(op, ufunc, x)
    # bf16 / fp8 / tf32: the op behaves as NumPy's does on float32 (same float, or bool)
    try:
        out = _numpy_dtype(op, ufunc, float32)
    except BuildError:
        raise BuildError(f"{op}: not defined for dtype {x.numpy_name}") from None
    return x if out.is_float else out


def binary_dtype(op: str, ufunc: Callable, category: str, a: DType, b: DType) -> DType:
    """Result dtype of an elementwise binary op (category: arith, compare, logical, bitwise)."""
    if a.is_native_numpy and b.is_native_numpy:
        return _numpy_dtype(op, ufunc, a, b)
    if category in ("compare", "logical"):
        return bool_
    if category == "bitwise":
        raise BuildError(f"{op}: needs integer or bool operands, got {a.numpy_name} and {b.numpy_name}")
    return promote_types(a, b)


_REDUCE_FN = {
    "sum": np.sum,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "mean": np.mean,
    "var": np.var,
    "std": np.std,
    "any": np.any,
    "all": np.all,
}


def reduce_dtype(op: str, kind: str, x: DType) -> DType:
    if kind in ("any", "all"):
        return bool_
    if x.is_native_numpy:
        return _numpy_dtype(op, _REDUCE_FN[kind], x)
    return x


def matmul_dtype(op: str, a: DType, b: DType) -> DType:
    if a.is_native_numpy and b.is_native_numpy:
        return _numpy_dtype(op, lambda x, y: np.matmul(x.reshape(1, 1), y.reshape(1, 1)), a, b)
    return promote_types(a, b)


def matmul_shape(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy matmul result shape, including the 1-D promotion rules and batch broadcasting."""
    if not a or not b:
        raise BuildError(f"{op}: operands must have rank >= 1, got shapes {a} and {b}")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise BuildError(f"{op}: contraction dims differ: {a} @ {b} ({a2[-1]} vs {b2[-2]})")
    batch = broadcast_shapes(op, a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def slice_length(start: int, stop: int, step: int) -> int:
    return len(range(start, stop, step))
