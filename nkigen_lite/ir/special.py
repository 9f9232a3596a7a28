"""NumPy implementations of the elementwise functions NumPy lacks (erf, gelu, sigmoid, ...),
shared by the dialects: the tensor ops' references and the NKI activation functions."""

from __future__ import annotations

import numpy as np

_SQRT_PI = np.sqrt(np.pi)


def erf(x: np.ndarray) -> np.ndarray:
    """Gauss error function to ~1e-15 relative accuracy in float64 (Taylor series for |x| <= 3,
    continued fraction for the complement beyond)."""
    x = np.asarray(x)
    xd = x.astype(np.float64)
    ax = np.abs(xd)
    small = np.where(ax <= 3.0, xd, 0.0)
    term = small.copy()
    total = small.copy()
    x2 = small * small
    for n in range(1, 80):
        term = term * (-x2) / n
        total = total + term / (2 * n + 1)
    series = 2.0 / _SQRT_PI * total
    big = np.where(ax > 3.0, ax, 4.0)
    k = big.copy()
    for j in range(80, 0, -1):
        k = big + (j / 2.0) / k
    erfc = np.exp(-big * big) / (_SQRT_PI * k)
    tail = np.sign(xd) * (1.0 - erfc)
    out = np.where(ax <= 3.0, series, tail)
    out = np.where(np.isnan(xd), np.nan, out)
    return out.astype(x.dtype) if x.dtype.kind == "f" else out


def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def silu(x: np.ndarray) -> np.ndarray:
    return x * sigmoid(x)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))."""
    return 0.5 * x * (1.0 + erf(x / np.sqrt(np.asarray(2.0, x.dtype))))


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(np.zeros_like(x), x)


def rsqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / np.sqrt(x)


def reciprocal(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return 1.0 / x


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros_like(x))
