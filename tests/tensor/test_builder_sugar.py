"""Builder sugar: one Python expression, evaluated once on Builder Values (``ns`` = the Builder)
and once on NumPy arrays (``ns`` = numpy), must agree in shape, dtype (narrowed) and value."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing import assert_close

from .numpy_ref import data, narrow

EXPRESSIONS = {
    "add": lambda ns, x, y, i, j: x + y,
    "sub": lambda ns, x, y, i, j: x - y,
    "mul": lambda ns, x, y, i, j: x * y,
    "truediv": lambda ns, x, y, i, j: x / y,
    "floordiv": lambda ns, x, y, i, j: i // j,
    "mod": lambda ns, x, y, i, j: i % j,
    "float_floordiv_mod": lambda ns, x, y, i, j: (x // 0.5) + (x % 0.75),
    "pow": lambda ns, x, y, i, j: x**2 + ns.abs(y) ** 0.5,
    "int_pow": lambda ns, x, y, i, j: i**2,
    "matmul": lambda ns, x, y, i, j: x @ y,
    "rmatmul_1d": lambda ns, x, y, i, j: y @ x.T,
    "radd": lambda ns, x, y, i, j: 2.0 + x,
    "rsub": lambda ns, x, y, i, j: 3 - x,
    "rmul": lambda ns, x, y, i, j: 2 * x,
    "rtruediv": lambda ns, x, y, i, j: 1.0 / y,
    "rfloordiv": lambda ns, x, y, i, j: 7 // j,
    "rmod": lambda ns, x, y, i, j: 7 % j,
    "rpow": lambda ns, x, y, i, j: 2.0**x,
    "int_true_division": lambda ns, x, y, i, j: i / 2,
    "int_plus_float": lambda ns, x, y, i, j: i + 1.5,
    "lt": lambda ns, x, y, i, j: x < y,
    "le_scalar": lambda ns, x, y, i, j: x <= 1.0,
    "reflected_gt": lambda ns, x, y, i, j: 2.0 > x,
    "ge": lambda ns, x, y, i, j: x >= y,
    "eq": lambda ns, x, y, i, j: i == j,
    "ne_scalar": lambda ns, x, y, i, j: x != 0.5,
    "neg": lambda ns, x, y, i, j: -x,
    "pos": lambda ns, x, y, i, j: +x,
    "abs_builtin": lambda ns, x, y, i, j: abs(x - 1.0),
    "invert_bool": lambda ns, x, y, i, j: ~(x > 0),
    "invert_int": lambda ns, x, y, i, j: ~i,
    "bitwise": lambda ns, x, y, i, j: (i & j) | (i ^ 3) | (5 & j),
    "bool_logic": lambda ns, x, y, i, j: (x > 0) & (y < 1) | (x < -1),
    "T": lambda ns, x, y, i, j: x.T,
    "getitem": lambda ns, x, y, i, j: x[1:, ::-1] + x[-1, None, :] - x[::2, -3:][:, 1:2],
    "getitem_ellipsis": lambda ns, x, y, i, j: x[..., None] * x[None, ..., -2],
    "astype": lambda ns, x, y, i, j: x.astype(np.float16) + i.astype(np.int8),
    "astype_to_int": lambda ns, x, y, i, j: (x * 10).astype(np.int32),
    "reshape_args": lambda ns, x, y, i, j: x.reshape(2, 6),
    "reshape_tuple": lambda ns, x, y, i, j: x.reshape((6, -1)),
    "where_scalars": lambda ns, x, y, i, j: ns.where(x > 0, x, 0.0),
    "where_two_scalars": lambda ns, x, y, i, j: ns.where(x > y, 1.0, -1.0),
    "clip": lambda ns, x, y, i, j: ns.clip(x, -1.0, 1.0),
    "clip_int": lambda ns, x, y, i, j: ns.clip(i, 2, 5),
    "softmax": lambda ns, x, y, i, j: (
        ns.exp(x - ns.max(x, axis=-1, keepdims=True))
        / ns.sum(ns.exp(x - ns.max(x, axis=-1, keepdims=True)), axis=-1, keepdims=True)
    ),
    "reductions": lambda ns, x, y, i, j: (
        ns.mean(x, axis=0)
        + ns.var(x, axis=0, ddof=1)
        + ns.std(x, axis=0)
        + ns.min(x, axis=0)
        + ns.prod(y * 0.5)
    ),
    "bool_reductions": lambda ns, x, y, i, j: ns.any(x > 2, axis=1) | ns.all(i > 0, axis=1),
    "int_sum": lambda ns, x, y, i, j: ns.sum(i, axis=(0, 1)),
    "stack_concat": lambda ns, x, y, i, j: ns.concatenate([ns.stack([y, y], axis=0), x], axis=0),
    "expand_squeeze": lambda ns, x, y, i, j: ns.squeeze(ns.expand_dims(y, (0, 2)), axis=2),
    "transpose_axes": lambda ns, x, y, i, j: ns.transpose(ns.expand_dims(x, 0), (2, 0, 1)),
    "maximum_minimum": lambda ns, x, y, i, j: ns.maximum(x, y) - ns.minimum(x, 0.5),
    "unary_methods": lambda ns, x, y, i, j: (
        ns.sqrt(ns.abs(x))
        + ns.tanh(x)
        + ns.sin(x)
        + ns.cos(y)
        + ns.arctan(x)
        + ns.floor(x)
        + ns.ceil(x)
        + ns.sign(x)
        + ns.square(x)
        + ns.log(ns.exp(y))
    ),
    "numpy_scalar_left": lambda ns, x, y, i, j: np.float32(2) * x - np.float16(1),
    "numpy_array_left": lambda ns, x, y, i, j: np.arange(4, dtype=np.float32) + x,
    "aliases": lambda ns, x, y, i, j: (
        ns.subtract(ns.multiply(x, 2.0), ns.divide(x, y))
        + ns.power(ns.negative(ns.absolute(x)), 2)
        + ns.remainder(i, j)
        + ns.true_divide(i, j)
    ),
    "split": lambda ns, x, y, i, j: ns.split(x, [1, -1], axis=0)[1],
}


def _arrays():
    x = data((3, 4), nk.float32, 0)
    y = np.where(np.abs(data((4,), nk.float32, 1)) < 0.25, np.float32(0.5), data((4,), nk.float32, 1))
    i = data((3, 4), nk.int32, 2, lo=1, hi=20)
    j = data((4,), nk.int32, 3, lo=1, hi=6)
    return x, y, i, j


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_expression_agrees_with_numpy(name):
    expr = EXPRESSIONS[name]
    x, y, i, j = _arrays()
    with np.errstate(all="ignore"):
        ref = np.asarray(expr(np, x, y, i, j))
    b = nk.Builder("sugar")
    vals = [b.add_input(n, a.shape, a.dtype) for n, a in zip("xyij", (x, y, i, j))]
    out = expr(b, *vals)
    assert out.shape == ref.shape, name
    assert out.dtype is narrow(ref.dtype), (name, out.dtype, ref.dtype)
    b.set_outputs({"out": out})
    got = nk.run(b.graph, dict(zip("xyij", (x, y, i, j))))["out"]
    if out.dtype.is_float:
        assert_close(got, ref.astype(np.float64), out.dtype, what=name)
    else:
        np.testing.assert_array_equal(got, ref.astype(out.dtype.np_dtype), err_msg=name)


def test_value_properties():
    b = nk.Builder("t")
    x = b.add_input("x", (3, 4), nk.bfloat16)
    assert x.shape == (3, 4) and x.dtype is nk.bfloat16 and x.ndim == 2 and len(x) == 3
    assert x.type == nk.TensorType((3, 4), nk.bfloat16) and str(x.type) == "tensor<3x4xbf16>"
    s = b.sum(x)
    with pytest.raises(TypeError, match="rank-0"):
        len(s)
    with pytest.raises(TypeError, match="truth value"):
        bool(x > 0)
    with pytest.raises(TypeError, match="not iterable"):
        list(x)
    with pytest.raises(TypeError, match="truth value"):
        _ = x if x else None


def test_values_from_another_builder_are_rejected():
    b1, b2 = nk.Builder("a"), nk.Builder("b")
    x = b1.add_input("x", (2,), nk.float32)
    y = b2.add_input("y", (2,), nk.float32)
    with pytest.raises(nk.BuildError, match="tensor.add: .*different builder"):
        x + y
    with pytest.raises(nk.BuildError, match="different builder"):
        b2.set_outputs({"y": x})
    with pytest.raises(nk.BuildError, match="tensor.exp.*|operand.*different builder"):
        b2.exp(x)
