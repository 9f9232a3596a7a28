"""What tracing cannot express raises a clear error (nk.BuildError, also a TypeError for the
data-dependent cases) naming the NumPy function or the rule: never a silent fallback to NumPy."""

import numpy as np
import pytest

import nkigen_lite as nk

X = np.zeros((4, 6), np.float32)


def trace_error(fn, *args, match):
    args = args or (X,)
    with pytest.raises(nk.BuildError, match=match) as info:
        nk.trace(fn).trace(*args)
    return info.value


@pytest.mark.parametrize(
    "fn, match",
    [
        (lambda x: np.arcsin(x), r"numpy\.arcsin is not supported when tracing"),
        (lambda x: np.add.accumulate(x), r"numpy\.add\.accumulate is not supported"),
        (lambda x: np.cumprod(x, axis=0), r"numpy\.cumprod is not supported when tracing"),
        (lambda x: x.cumprod(), r"numpy\.cumprod is not supported when tracing"),
        (lambda x: np.linalg.inv(x), r"numpy\.linalg\.inv is not supported"),
        (lambda x: np.median(x), r"numpy\.median is not supported"),
        (lambda x: np.sort(x), r"numpy\.sort is not supported"),
        (lambda x: np.divmod(x, 2), r"numpy\.divmod is not supported"),
        (lambda x: x << 1, r"numpy\.left_shift is not supported"),
    ],
)
def test_unsupported_numpy_functions_name_themselves(fn, match):
    trace_error(fn, match=match)


@pytest.mark.parametrize(
    "fn, what",
    [
        (lambda x: np.asarray(x), "cannot become a NumPy array"),
        (lambda x: np.array([x, x]), "cannot become a NumPy array"),
        (lambda x: float(x.sum()), r"float\(\) needs a value"),
        (lambda x: int(x[0, 0]), r"int\(\) needs a value"),
        (lambda x: range(x.max()), "cannot be used as a Python index"),
        (lambda x: x.item(), r"item\(\) needs a value"),
        (lambda x: x.tolist(), r"tolist\(\) needs the values"),
        (lambda x: 0.0 in x, "'in' needs the values"),
    ],
)
def test_traced_values_have_no_data(fn, what):
    e = trace_error(fn, match=f"no data at trace time.*{what}")
    assert "shape (4, 6)" in str(e) or "shape ()" in str(e)


def test_data_dependent_control_flow():
    def branch(x):
        if x.sum() > 0:
            return x
        return -x

    def loop(x):
        while x.max() > 1:
            x = x / 2
        return x

    def logic(x):
        return (x > 0) and (x < 1)

    def python_max(x):
        return max(x[0], x[1])

    for fn in (branch, loop, logic, python_max):
        e = trace_error(fn, match="data-dependent Python control flow.*np.where")
        assert isinstance(e, TypeError)


@pytest.mark.parametrize(
    "fn, match",
    [
        (lambda x: np.add(x, 1, out=np.empty_like(X)), r"numpy\.add: out= is not supported"),
        (lambda x: np.exp(x, out=x), r"numpy\.exp: out= is not supported"),
        (lambda x: np.sum(x, out=np.empty(())), r"numpy\.sum: out= is not supported"),
        (lambda x: np.concatenate([x, x], out=np.empty((8, 6))), r"numpy\.concatenate: out="),
        (lambda x: np.add(x, 1, where=x > 0), r"numpy\.add: keyword argument where="),
        (lambda x: np.multiply(x, 2, dtype=np.float16), r"numpy\.multiply: keyword argument dtype="),
        (lambda x: np.sum(x, where=x > 0), r"numpy\.sum: keyword argument where="),
        (lambda x: np.maximum.reduce(x, out=np.empty(6)), r"numpy\.maximum\.reduce: out="),
    ],
)
def test_out_where_and_dtype_arguments_are_rejected(fn, match):
    trace_error(fn, match=match)


def test_numpy_array_cannot_receive_traced_values_in_place():
    def f(x):
        acc = np.zeros((4, 6), np.float32)
        acc += x
        return acc

    trace_error(f, match=r"numpy\.add: out= is not supported")


@pytest.mark.parametrize(
    "fn, match",
    [
        (lambda x: np.where(x > 0), r"one-argument form \(np\.nonzero\)"),
        (lambda x: np.where(x > 0, x), "either both or neither"),
        (lambda x: np.reciprocal(x.astype(np.int32)), "integer division in NumPy"),
        (lambda x: np.sum(x, axis=2), r"numpy\.sum: tensor\.reduce: axis 2 is out of range"),
        (lambda x: np.reshape(x, (5, 5)), "cannot reshape"),
        (lambda x: np.reshape(x, (6, 4), order="F"), r"order='F' is not supported"),
        (lambda x: np.transpose(x, (0, 0)), r"numpy\.transpose"),
        (lambda x: np.broadcast_to(x, (3, 6)), r"cannot broadcast shape \(4, 6\) to \(3, 6\)"),
        (lambda x: x + np.ones(5), "do not broadcast"),
        (lambda x: x @ 2.0, "operands must be tensors, not scalars"),
        (lambda x: np.split(x, 5), "do not split into 5 equal parts"),
        (lambda x: np.pad(x, 1, mode="median"), r"mode='median' is not supported"),
        (lambda x: np.take(x, [0, 9], axis=0), r"index 9 is out of bounds for axis 0 with size 4"),
        (lambda x: np.take(x, x), r"numpy\.take: indices must be integers"),
        (lambda x: np.var(x, mean=np.zeros((4, 1))), r"numpy\.var: mean= is not supported"),
        (lambda x: np.concatenate([x[0, 0], x[0, 0]]), "zero-dimensional arrays"),
        (lambda x: np.dot(x, x), r"numpy\.dot|contraction dims differ"),
        (lambda x: np.repeat(x, x.astype(np.int32)), "data-dependent shape"),
        (lambda x: np.argmax(x[:0]), "empty sequence"),
        (lambda x: x + "a", "cannot use str"),
        (lambda x: x + [x, x], "use np.stack"),
    ],
)
def test_bad_calls_name_the_function_and_rule(fn, match):
    trace_error(fn, match=match)


def test_unsupported_ndarray_attribute():
    with pytest.raises(AttributeError, match=r"ndarray\.sort is not supported on traced arrays"):
        nk.trace(lambda x: x.sort()).trace(X)
    with pytest.raises(AttributeError, match="has no attribute 'foo'"):
        nk.trace(lambda x: x.foo).trace(X)


def test_traced_arrays_from_another_trace_are_rejected():
    leaked = []

    def first(x):
        leaked.append(x)
        return x

    nk.trace(first).trace(X)
    trace_error(lambda x: x + leaked[0], match="different (trace|builder)")
    trace_error(lambda x: leaked[0], match="different trace")


def test_traced_value_is_not_hashable():
    with pytest.raises(TypeError, match="unhashable"):
        nk.trace(lambda x: {x: 1}).trace(X)


@pytest.mark.parametrize(
    "fn, match",
    [
        (lambda x: np.zeros_like(x, order="Q"), r"numpy\.zeros_like: order='Q' is not a NumPy"),
        (lambda x: np.full_like(x, 1.0, device="gpu"), r"numpy\.full_like: device='gpu'"),
        (lambda x: np.copy(x, subok="yes"), r"numpy\.copy: subok must be a bool"),
        (lambda x: x.astype(np.float16, order="Z"), r"astype: order='Z'"),
        (lambda x: np.broadcast_to(x, (2, 4, 6), subok=None), r"numpy\.broadcast_to: subok"),
    ],
)
def test_bad_memory_layout_arguments_are_named(fn, match):
    trace_error(fn, match=match)


def test_memory_layout_arguments_at_valid_values_trace():
    g = nk.trace(
        lambda x: np.ones_like(x, order="C", subok=False, device="cpu") + np.copy(x, order="F")
    ).trace(X)
    (got,) = nk.run(g, {"x": X + 2}).values()
    np.testing.assert_array_equal(got, X + 3)
