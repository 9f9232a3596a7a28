"""``nk.ops``: composite and activation ops callable on NumPy arrays, traced arrays and Values.

    nk.ops.softmax(x, axis=-1)      # NumPy array in, NumPy array out (the defining function)
                                    # inside @nk.trace: one tensor.softmax op in the graph
                                    # on a Builder Value: b.softmax(x, axis=-1)

Composite ops (defined with ``nk.define_op``; nkigen_lite/tensor/composites.py and
tensor/ops/activations.py): silu, softplus, gelu (erf form), softmax, log_softmax, logsumexp,
rms_norm, layer_norm, gelu_tanh, and any op defined later (``nk.ops.<name>`` finds it).
``gelu(x, approximate="tanh")`` is ``gelu_tanh``. silu, softplus and gelu lower to the ScalarE
activation of their name where the target has it, else to their expansion.
"""

from __future__ import annotations

import numpy as np

from .ir.errors import BuildError
from .ir.value import Value
from .tensor import composites  # noqa: F401  (defines the shipped composite ops)
from .tensor import ops as T
from .tensor.trace_array import TracedArray


def _builder_of(args):
    for a in args:
        if isinstance(a, TracedArray):
            return a.builder, True
        if isinstance(a, Value) and a._builder is not None:
            return a._builder, False
    return None, False


def _unwrap(b, x):
    return x.value if isinstance(x, TracedArray) else b.as_value(x) if not isinstance(x, Value) else x


def apply(name: str, *operands, **attrs):
    """Apply composite op ``name`` to NumPy arrays (its defining function), traced arrays or
    Builder Values (one ``tensor.<name>`` op)."""
    cls = T.COMPOSITE_OPS.get(name)
    if cls is None:
        raise BuildError(f"nk.ops: unknown composite op {name!r}; known: {', '.join(T.COMPOSITE_OPS)}")
    b, traced = _builder_of(operands)
    if b is None:
        unknown = sorted(set(attrs) - {a.name for a in cls.attr_spec})
        if unknown:
            raise BuildError(
                f"{cls.name}: unknown attributes {unknown}; it takes {[a.name for a in cls.attr_spec]}"
            )
        return cls.definition(*(np.asarray(x) for x in operands), **attrs)
    v = b.composite(name, *(_unwrap(b, x) for x in operands), **attrs)
    return TracedArray(v) if traced else v


def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""
    return apply("softmax", x, axis=axis)


def log_softmax(x, axis=-1):
    """(x - max) - log(sum(exp(x - max))) along ``axis``."""
    return apply("log_softmax", x, axis=axis)


def logsumexp(x, axis=-1, keepdims=False):
    """log(sum(exp(x))) along ``axis``, shifted by the maximum."""
    return apply("logsumexp", x, axis=axis, keepdims=keepdims)


def rms_norm(x, axis=-1, eps=1e-6):
    """x / sqrt(mean(x * x) + eps) along ``axis``."""
    return apply("rms_norm", x, axis=axis, eps=eps)


def layer_norm(x, axis=-1, eps=1e-5):
    """(x - mean) / sqrt(var + eps) along ``axis``."""
    return apply("layer_norm", x, axis=axis, eps=eps)


def gelu(x, approximate: str = "none"):
    """GELU: erf form (``tensor.gelu``), or tanh form (``approximate="tanh"``, gelu_tanh)."""
    if approximate == "tanh":
        return apply("gelu_tanh", x)
    if approximate != "none":
        raise BuildError(f"nk.ops.gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return apply("gelu", x)


def silu(x):
    """x * sigmoid(x) (``tensor.silu``)."""
    return apply("silu", x)


def softplus(x):
    """log(1 + exp(x)) (``tensor.softplus``)."""
    return apply("softplus", x)


def topk(x, k, axis=-1, largest=True):
    """The ``k`` largest elements along ``axis``, descending, and their int32 indices (equal
    values: lower index first; NaN above every number): ``(values, indices)``. NumPy arrays in,
    NumPy arrays out; inside @nk.trace (or on Builder Values) one ``tensor.topk`` op.
    ``largest=False`` gives the ``k`` smallest, ascending (equal values: lower index first; NaN
    still counts as the extreme, as ``np.argmin`` does): ``tensor.topk`` of ``-x`` (floats) or
    ``~x`` (integers: order-reversing without overflow), its values flipped back."""
    if not isinstance(largest, (bool, np.bool_)):
        raise BuildError(f"nk.topk: largest must be True or False, got {largest!r}")
    b, traced = _builder_of((x,))
    if not largest:
        if b is None:
            kind = np.asarray(x).dtype.kind
        else:
            dt = _unwrap(b, x).dtype
            kind = "b" if dt.is_bool else "f" if dt.is_float else "i"
        if kind == "b":
            raise BuildError("nk.topk: largest=False is not defined for bool arrays")

        def flip(v):
            return ~v if kind in "iu" else -v

        values, indices = topk(flip(np.asarray(x) if b is None else x), k, axis)
        return flip(values), indices
    if b is None:
        a = np.asarray(x)
        if a.ndim == 0:
            raise BuildError(f"nk.topk: the array must have at least one axis, got shape {a.shape}")
        from .tensor import rules

        ax = rules.normalize_axis("nk.topk", axis, a.ndim)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= a.shape[ax]:
            raise BuildError(
                f"nk.topk: k={k!r} must be an integer in [1, {a.shape[ax]}] (the length of axis {ax})"
            )
        return T.TopkOp.reference(a, int(k), ax)
    values, indices = b.topk(_unwrap(b, x), k, axis)
    return (TracedArray(values), TracedArray(indices)) if traced else (values, indices)


def __getattr__(name: str):
    """Composite ops defined after import: ``nk.ops.<name>(x, ...)``."""
    if name in T.COMPOSITE_OPS:
        return lambda *xs, **attrs: apply(name, *xs, **attrs)
    raise AttributeError(f"module 'nkigen_lite.ops' has no attribute {name!r}")
