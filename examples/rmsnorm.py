"""RMSNorm written in plain NumPy: the kernel of docs/tutorial.md.

Nothing here imports nkigen_lite: ``nkigen-lite compile examples/rmsnorm.py:rmsnorm ...`` traces
the function as it is. ``reference`` is the same math in float64, written separately, to check
the compiled kernel against.
"""

import numpy as np


def rmsnorm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x², last axis) + eps) * w, computed in float32, returned in x's dtype."""
    xf = x.astype(np.float32)
    ms = (xf * xf).mean(axis=-1, keepdims=True)
    return (xf / np.sqrt(ms + eps) * w.astype(np.float32)).astype(x.dtype)


def reference(x, w, eps=1e-6):
    """The float64 answer."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w
