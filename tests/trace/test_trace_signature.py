"""nk.trace's contract: input names and types from the example arguments, output names from
the result, constants, the decorator forms, the plain call, and deterministic graphs."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk

F32 = np.float32


def empty(*shape, dtype=F32):
    return np.zeros(shape, dtype)


def input_types(g):
    return {n: (v.shape, v.dtype) for n, v in zip(g.input_names, g.inputs)}


def test_public_name_and_docstring_example():
    @nk.trace
    def f(x, w):
        return np.tanh(x @ w)

    g = f.trace(empty(128, 64), empty(64, 32))
    assert isinstance(g, nk.Graph)
    assert g.name == "f"
    assert input_types(g) == {"x": ((128, 64), nk.float32), "w": ((64, 32), nk.float32)}
    assert list(g.outputs) == ["y"] and g.outputs["y"].shape == (128, 32)
    x = np.random.default_rng(0).standard_normal((128, 64)).astype(F32)
    w = np.random.default_rng(1).standard_normal((64, 32)).astype(F32)
    np.testing.assert_allclose(nk.run(g, {"x": x, "w": w})["y"], np.tanh(x @ w), rtol=1e-5, atol=1e-6)
    assert f.__name__ == "f" and callable(f)


def test_example_argument_kinds():
    """Arrays, TensorTypes and (shape, dtype) pairs are inputs; 64-bit dtypes narrow."""

    def f(a, b, c, d, e, g):
        return a + b + c + d + e + g

    tr = nk.trace(f).trace(
        empty(2, 3),
        nk.TensorType((2, 3), nk.float16),
        ((2, 3), np.float32),
        ((3,), "bfloat16"),
        np.zeros((2, 3)),
        np.zeros((), np.int64),
    )
    assert input_types(tr) == {
        "a": ((2, 3), nk.float32),
        "b": ((2, 3), nk.float16),
        "c": ((2, 3), nk.float32),
        "d": ((3,), nk.bfloat16),
        "e": ((2, 3), nk.float32),
        "g": ((), nk.int32),
    }


def test_varargs_kwargs_keyword_only_and_containers():
    def f(x, *rest, scale, opts=None, weights, **extra):
        return x * scale + sum(rest) + weights["a"] + weights["b"][1] + extra["bias-1"]

    g = nk.trace(f).trace(
        empty(4),
        empty(4),
        empty(4),
        scale=2.0,
        weights={"a": empty(4), "b": [empty(1), empty(4)]},
        **{"bias-1": empty(4)},
    )
    assert g.input_names == ["x", "rest_0", "rest_1", "weights_a", "weights_b_0", "weights_b_1", "bias_1"]
    ins = {n: np.full(4, k + 1, F32) for k, n in enumerate(g.input_names)}
    ins["weights_b_0"] = np.zeros(1, F32)
    out = nk.run(g, ins)["y"]
    np.testing.assert_array_equal(out, 1 * 2.0 + 2 + 3 + 4 + 6 + 7)


def test_sanitized_and_deduplicated_names():
    def f(x, *x_0):
        return x + x_0[0] + x_0[1]

    g = nk.trace(f).trace(empty(2), empty(2), empty(2))
    assert g.input_names == ["x", "x_0_0", "x_0_1"]

    def h(p, q):
        return p["k"] + q

    g = nk.trace(h).trace({"k": empty(2)}, empty(2))
    assert g.input_names == ["p_k", "q"]

    def clash(a_b, a):
        return a_b + a["b"]

    g = nk.trace(clash).trace(empty(2), {"b": empty(2)})
    assert g.input_names == ["a_b", "a_b_1"]


def test_scalars_and_static_arguments_are_constants():
    def f(x, eps, mode, mask):
        assert isinstance(eps, float) and mode == "relu"
        assert isinstance(mask, np.ndarray)  # static: stays a NumPy array
        return np.maximum(x, 0) * mask + eps

    tf = nk.trace(static_argnames=("mask",))(f)
    mask = np.array([1.0, 0.0, 1.0], F32)
    g = tf.trace(empty(3), 0.5, "relu", mask)
    assert g.input_names == ["x"]
    out = nk.run(g, {"x": np.array([-1.0, 2.0, 3.0], F32)})["y"]
    np.testing.assert_array_equal(out, [0.5, 0.5, 3.5])
    assert g.outputs["y"].dtype is nk.float32  # weak Python scalar 0.5


def test_numpy_scalar_argument_is_a_strong_constant():
    g = nk.trace(lambda x, s: x * s).trace(empty(3, dtype=np.float16), np.float32(2))
    assert g.input_names == ["x"] and g.outputs["y"].dtype is nk.float32
    assert g.name == "_lambda_"


def test_output_naming():
    def tup(x):
        return x + 1, x * 2

    def lst(x):
        return [x]

    def dct(x):
        return {"sum": x.sum(), "max_": x.max()}

    def const(x):
        return x, np.arange(3), 2.5

    assert list(nk.trace(tup).trace(empty(2)).outputs) == ["y0", "y1"]
    assert list(nk.trace(lst).trace(empty(2)).outputs) == ["y0"]
    assert list(nk.trace(dct).trace(empty(2)).outputs) == ["sum", "max_"]
    g = nk.trace(const).trace(empty(2))
    out = nk.run(g, {"x": np.array([1.0, 2.0], F32)})
    np.testing.assert_array_equal(out["y1"], [0, 1, 2])
    assert out["y1"].dtype == np.int32 and out["y2"] == np.float32(2.5)


@pytest.mark.parametrize(
    "result, message",
    [
        ({"a b": 0}, "not a valid output name"),
        ({1: 0}, "not a valid output name"),
        ({}, "empty dict"),
        ((), "empty tuple"),
        (None, "is a NoneType, not an array"),
        ("text", "is a str, not an array"),
        ([[1.0]], "is a list, not an array"),
    ],
)
def test_bad_outputs_are_clear_errors(result, message):
    def f(x):
        if isinstance(result, dict):
            return {k: x for k in result}
        return result

    with pytest.raises(nk.BuildError, match=message):
        nk.trace(f).trace(empty(2))


def test_bad_example_arguments_are_clear_errors():
    def f(x, y):
        return x + y

    with pytest.raises(nk.BuildError, match="example arguments do not match"):
        nk.trace(f).trace(empty(2))
    with pytest.raises(nk.BuildError, match="argument 'y'.*complex128 is not supported"):
        nk.trace(f).trace(empty(2), np.zeros(2, np.complex128))
    with pytest.raises(nk.BuildError, match="static_argnames \\['z'\\]"):
        nk.trace(f, static_argnames=("z",))
    with pytest.raises(nk.BuildError, match="needs a function"):
        nk.trace(3)


def test_plain_call_and_nested_trace():
    @nk.trace(name="inner_fn")
    def inner(x):
        return np.exp(x) - 1

    @nk.trace
    def outer(x):
        return inner(x) * 2  # a traced function called inside another trace is inlined

    x = np.linspace(-1, 1, 5).astype(F32)
    np.testing.assert_array_equal(inner(x), np.exp(x) - 1)
    assert inner.trace(empty(5)).name == "inner_fn"
    g = outer.trace(empty(5))
    np.testing.assert_allclose(nk.run(g, {"x": x})["y"], (np.exp(x) - 1) * 2, rtol=1e-6)
    assert "inner_fn" in repr(inner)


def test_tracing_is_deterministic():
    def f(x, w, b):
        h = np.maximum(x @ w + b, 0)
        return h.sum(axis=-1), np.tril(h)[:, ::2]

    args = (empty(8, 16), empty(16, 16), empty(16))
    texts = {str(nk.trace(f).trace(*args)) for _ in range(3)}
    assert len(texts) == 1
    assert str(nk.parse(texts.pop())) == str(nk.trace(f).trace(*args))


def test_bf16_and_int_inputs_keep_their_dtypes():
    def f(x, i):
        return x * 2, i // 3, x.dtype == ml_dtypes.bfloat16

    g = nk.trace(f).trace(empty(4, dtype=ml_dtypes.bfloat16), empty(4, dtype=np.int16))
    assert [v.dtype for v in g.outputs.values()] == [nk.bfloat16, nk.int16, nk.bool_]


def test_unused_intermediates_are_removed():
    def f(x):
        q, k, v = np.split(x, 3, axis=-1)
        np.exp(k)  # computed, never used
        return q * 2

    g = nk.trace(f).trace(empty(4, 6))
    assert [op.name for op in g.body] == ["tensor.slice", "tensor.full", "tensor.mul", "return"]


def test_tf32_inputs_and_dtype_attribute():
    def f(x):
        assert x.dtype is nk.tfloat32
        return x.astype(x.dtype) * 2, x.astype(np.float32)

    g = nk.trace(f).trace(nk.TensorType((3,), nk.tfloat32))
    assert [v.dtype for v in g.outputs.values()] == [nk.tfloat32, nk.float32]
