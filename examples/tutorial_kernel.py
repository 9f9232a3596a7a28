"""The kernel of docs/tutorial.md: GELU (tanh approximation) written in plain NumPy.

``gelu_t`` is the first version, which hands the caller the result transposed; the report shows
what that costs (docs/tutorial.md, step 5). ``gelu`` is the fixed version. ``reference`` is the
same math in float64, written separately, to check the compiled kernel against.
"""

import numpy as np

SHAPE = (512, 1024)
C = 0.7978845608028654  # sqrt(2 / pi)


def gelu(x):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))."""
    inner = C * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + np.tanh(inner))


def gelu_t(x):
    """The same, returned transposed (what the first caller asked for)."""
    return gelu(x).T


def reference(x):
    """The float64 answer."""
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
