"""Independent NumPy references for the tensor tests (never calls nkigen_lite's numerics).

The project's dtype rule (docs/architecture.md §5): NumPy's result dtype, then 64-bit results
narrowed to 32-bit; for bf16 / fp8 / tf32 the result is the smallest format that holds both
operands (two different 1-byte floats -> bf16, bf16 with f16 -> f32), written out below as a
containment lattice independent of ``dtypes.promote_types``.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

import nkigen_lite as nk

NATIVE = (nk.float32, nk.float16, nk.int8, nk.int16, nk.int32, nk.uint8, nk.uint16, nk.uint32, nk.bool_)
NON_NATIVE = (nk.bfloat16, nk.tfloat32, nk.float8_e4m3, nk.float8_e4m3fn, nk.float8_e5m2, nk.float8_e3m4)
FLOATS = tuple(d for d in nk.ALL_DTYPES if d.is_float)
INTS = (nk.int8, nk.int16, nk.int32, nk.uint8, nk.uint16, nk.uint32)

_NARROW = {np.dtype(np.float64): nk.float32, np.dtype(np.int64): nk.int32, np.dtype(np.uint64): nk.uint32}
_BY_NP = {
    np.dtype(np.float32): nk.float32,
    np.dtype(np.float16): nk.float16,
    np.dtype(np.int8): nk.int8,
    np.dtype(np.int16): nk.int16,
    np.dtype(np.int32): nk.int32,
    np.dtype(np.uint8): nk.uint8,
    np.dtype(np.uint16): nk.uint16,
    np.dtype(np.uint32): nk.uint32,
    np.dtype(np.bool_): nk.bool_,
}

# (max finite exponent, min normal exponent, mantissa bits, has infinities) of each float format
_FORMAT = {
    "f32": (127, -126, 23, True),
    "tf32": (127, -126, 10, True),
    "bf16": (127, -126, 7, True),
    "f16": (15, -14, 10, True),
    "f8e4m3": (7, -6, 3, True),
    "f8e4m3fn": (8, -6, 3, False),
    "f8e5m2": (15, -14, 2, True),
    "f8e3m4": (3, -2, 4, True),
}


def narrow(npd) -> nk.DType:
    """The project's dtype for a NumPy result dtype: 64-bit narrowed to 32-bit."""
    npd = np.dtype(npd)
    return _NARROW.get(npd) or _BY_NP[npd]


def _holds(big: str, small: str) -> bool:
    b, s = _FORMAT[big], _FORMAT[small]
    return b[0] >= s[0] and b[1] <= s[1] and b[2] >= s[2] and (b[3] or not s[3])


def _int_bits(d: nk.DType) -> int:
    """Significand bits a float needs to hold every value of integer dtype ``d`` exactly."""
    return d.bits - (1 if d.is_signed else 0)


def expected_promotion(a: nk.DType, b: nk.DType) -> nk.DType:
    """Result dtype of arithmetic between tensors of dtypes a and b (independent model)."""
    if a in NATIVE and b in NATIVE:
        return narrow(np.result_type(a.np_dtype, b.np_dtype))
    if a is b:
        return a
    if a.is_float and b.is_float:
        if _holds(a.name, b.name):
            return a
        if _holds(b.name, a.name):
            return b
        if a.itemsize == 1 and b.itemsize == 1:
            return nk.bfloat16
        return nk.float32
    f, other = (a, b) if a.is_float else (b, a)
    if other.is_bool:
        return f
    # like NumPy's int8 + f16 -> f16 and int16 + f16 -> f32: the float holds the int exactly,
    # with NumPy's choice (f16 for 8-bit ints, f32 beyond) and bf16 for 1-byte floats
    if _int_bits(other) <= 8:
        return f if f.itemsize >= 2 else nk.bfloat16
    return nk.float32


def storage(x, dtype: nk.DType) -> np.ndarray:
    """Round float64 data to ``dtype``'s storage (tf32: float32 with 11 significant bits)."""
    x = np.asarray(x, dtype=np.float64)
    if dtype is nk.tfloat32:
        return round_tf32(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dtype.np_dtype)


def round_tf32(x) -> np.ndarray:
    """Round to 11 significant bits, ties to even (frexp-based, independent of the package)."""
    x = np.asarray(x, dtype=np.float64)
    m, e = np.frexp(x)
    with np.errstate(invalid="ignore"):
        r = np.ldexp(np.rint(m * 2.0**11) / 2.0**11, e)
    return np.where(np.isfinite(x), r, x).astype(np.float32)


def f64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def data(shape, dtype: nk.DType, seed: int = 0, lo: float = -3.0, hi: float = 3.0) -> np.ndarray:
    """Deterministic test data in ``dtype``'s storage: floats in [lo, hi], small ints."""
    rng = np.random.default_rng(seed)
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    if dtype.is_int:
        ilo = max(int(lo), 0 if not dtype.is_signed else -100)
        ihi = min(int(hi), 100) if hi < 100 else 100
        return rng.integers(ilo, ihi + 1, size=shape).astype(dtype.np_dtype)
    return storage(rng.uniform(lo, hi, size=shape), dtype)


def saturating_to_int(x, dtype: nk.DType) -> np.ndarray:
    """The project's float -> int cast: truncate toward zero, saturate, NaN -> 0."""
    x = f64(x)
    info = np.iinfo(dtype.np_dtype)
    r = np.clip(np.trunc(np.nan_to_num(x, nan=0.0, posinf=info.max, neginf=info.min)), info.min, info.max)
    return r.astype(dtype.np_dtype)


def erf(x) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(f64(x))


def max_finite(dtype: nk.DType) -> float:
    return float(ml_dtypes.finfo(np.float32 if dtype is nk.tfloat32 else dtype.np_dtype).max)
