"""An index out of range at run time is one nk.IndexOutOfRange (an InterpretError and an
IndexError) in the user's terms on every run path: the tensor op, the index value, its
position in the user's index array, the axis and its size (tensor/index_bounds.py), never a
flattened offset of a view the lowering made, never a silent wrong element."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

import nkigen_lite as nk

X = np.arange(64, dtype=np.float32).reshape(4, 16)
TABLE = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)
SQ = np.arange(64, dtype=np.float32).reshape(8, 8)  # square: the axis is told by its stride


def _i32(a):
    return np.array(a, np.int32)


def _set_rows(x, i, v):
    y = x + 0
    y[i] = v
    return y


def _put(x, i, v):
    y = x + 0
    np.put_along_axis(y, i, v, axis=1)
    return y


def _put_axis0(x, i, v):
    y = x + 0
    np.put_along_axis(y, i, v, axis=0)
    return y


def _set_row(x, t, v):
    y = x + 0
    y[t] = v
    return y


# name: (function, arguments with one bad index, tensor op, value, position, axis, size)
CASES = {
    "take_along_axis": (
        lambda x, i: np.take_along_axis(x, i, axis=1),
        (X, _i32([[0, 1], [2, 3], [4, 99], [5, 6]])),
        "tensor.take_along_axis",
        99,
        "i[2, 1]",
        1,
        16,
    ),
    "take_along_axis negative": (
        lambda x, i: np.take_along_axis(x, i, axis=1),
        (X, _i32([[0, 1], [2, 3], [4, -17], [5, 6]])),
        "tensor.take_along_axis",
        -17,
        "i[2, 1]",
        1,
        16,
    ),
    "take axis 0": (
        lambda x, i: np.take(x, i, axis=0),
        (X, _i32([1, 7])),
        "tensor.gather_rows",
        7,
        "i[1]",
        0,
        4,
    ),
    "take axis 1": (
        lambda x, i: np.take(x, i, axis=1),
        (X, _i32([1, 17])),
        "tensor.gather_rows",
        17,
        "i[1]",
        1,
        16,
    ),
    "embedding x[ids]": (
        lambda t, i: t[i],
        (TABLE, _i32([[1, 2], [64, 3]])),
        "tensor.gather_rows",
        64,
        "i[1, 0]",
        0,
        64,
    ),
    "x[ids] negative": (lambda x, i: x[i], (X, _i32([1, -9])), "tensor.gather_rows", -9, "i[1]", 0, 4),
    "x[ids] = v": (
        _set_rows,
        (X, _i32([1, 5]), np.ones((2, 16), np.float32)),
        "tensor.scatter_rows",
        5,
        "i[1]",
        0,
        4,
    ),
    "put_along_axis": (
        _put,
        (X, _i32([[0], [1], [16], [2]]), np.ones((4, 1), np.float32)),
        "tensor.scatter_rows",
        16,
        "i[2, 0]",
        1,
        16,
    ),
    "put_along_axis axis 0 of a square": (
        _put_axis0,
        (SQ, _i32([[0, 1, 2, 3, 4, 5, 6, -9]]), np.ones((1, 8), np.float32)),
        "tensor.scatter_rows",
        -9,
        "i[0, 7]",
        0,
        8,
    ),
    "x[i, j] second array": (
        lambda x, i, j: x[i, j],
        (SQ, _i32([0, 1, 2]), _i32([3, 8, 1])),
        "tensor.gather_rows",
        8,
        "j[1]",
        1,
        8,
    ),
    "x[i, j] first array": (
        lambda x, i, j: x[i, j],
        (SQ, _i32([0, -10, 2]), _i32([3, 4, 1])),
        "tensor.gather_rows",
        -10,
        "i[1]",
        0,
        8,
    ),
    "x[arange, ids]": (
        lambda x, i: x[np.arange(4), i],
        (X, _i32([1, 2, 99, 3])),
        "tensor.gather_rows",
        99,
        "i[2]",
        1,
        16,
    ),
    "x[t]": (lambda x, t: x[t], (X, _i32(5)), "tensor.dynamic_slice", 5, "t", 0, 4),
    "x[t] = v": (
        _set_row,
        (X, _i32(-5), np.ones(16, np.float32)),
        "tensor.dynamic_update_slice",
        -5,
        "t",
        0,
        4,
    ),
}

PATHS = ("Kernel call", "nk.simulate", "nk.run")


GRAPHS = {}  # id(kernel) -> the tensor graph it was compiled from


def _compile(fn, args):
    g = nk.trace(fn).trace(*args)
    k = nk.compile(g)
    GRAPHS[id(k)] = g
    return k


@functools.cache
def _kernel(name):
    return _compile(*CASES[name][:2])


def _run(path, k, args):
    ins = dict(zip(k.input_names, args))
    if path == "Kernel call":
        return k(*args)
    if path == "nk.simulate":
        return nk.simulate(k, ins)
    return nk.run(GRAPHS[id(k)], ins)  # the traced tensor graph on the tensor interpreter


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", list(CASES))
def test_an_index_input_out_of_range_is_reported_in_the_users_terms(name, path):
    fn, args, op, value, pos, axis, size = CASES[name]
    with pytest.raises(IndexError):  # NumPy rejects the same input (the independent reference)
        fn(*args)
    k = _kernel(name)
    with pytest.raises(nk.IndexOutOfRange) as e:
        _run(path, k, args)
    msg = str(e.value)
    assert isinstance(e.value, nk.InterpretError) and isinstance(e.value, IndexError)
    assert msg.startswith(f"{op}: ")
    assert f"index {value} is out of bounds for axis {axis} with size {size}" in msg
    assert re.search(rf"index input {re.escape(pos)}[;)]", msg), msg
    assert "partition" not in msg and "%" not in msg  # nothing of the lowering's terms


# indices computed inside the graph: the interpreters' bounds checks, in the tensor op's terms
COMPUTED = {
    "take_along_axis of i + 1": (
        lambda x, i: np.take_along_axis(x, i + 1, axis=1),
        (X, _i32([[0, 1], [2, 3], [4, 15], [5, 6]])),
        "tensor.take_along_axis: index 16 is out of bounds for axis 1 with size 16 (at position [2, 1]",
    ),
    "take of i * 2": (
        lambda x, i: np.take(x, i * 2, axis=0),
        (X, _i32([1, 2])),
        "tensor.gather_rows: index 4 is out of bounds for axis 0 with size 4 (at position [1]",
    ),
    "x[i + 1, j] (flattened)": (
        lambda x, i, j: x[i + 1, j],
        (SQ, _i32([0, 7, 2]), _i32([1, 2, 3])),
        "tensor.gather_rows: index 8 is out of bounds for axis 0 with size 8 (at position [1] of the index",
    ),
    "put_along_axis of i + 1 (flattened)": (
        lambda x, i, v: _put_axis0(x, i + 1, v),
        (SQ, _i32([[0, 1, 2, 3, 4, 5, 6, 7]]), np.ones((1, 8), np.float32)),
        "tensor.scatter_rows: index 8 is out of bounds for axis 0 with size 8 "
        "(at position [0, 7] of the index",
    ),
}


@functools.cache
def _computed_kernel(name):
    return _compile(*COMPUTED[name][:2])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", list(COMPUTED))
def test_a_computed_index_out_of_range_names_the_tensor_op_unflattened(name, path):
    fn, args, want = COMPUTED[name]
    with pytest.raises(IndexError):
        fn(*args)
    with pytest.raises(nk.IndexOutOfRange) as e:
        _run(path, _computed_kernel(name), args)
    assert str(e.value).startswith(want), str(e.value)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ["take_along_axis negative", "x[ids] negative", "x[t] = v"])
def test_negative_indices_in_range_count_from_the_end_like_numpy(name, path):
    fn, args = CASES[name][:2]
    k = _kernel(name)
    size = CASES[name][6]
    i = args[1]
    good = np.where(i < -size, -size, np.where(i >= size, size - 1, i)).astype(np.int32)  # -size..size-1
    args = (args[0], good, *args[2:])
    want = fn(*args)
    got = _run(path, k, args)
    got = got["y"] if isinstance(got, dict) else got
    np.testing.assert_array_equal(np.asarray(got).reshape(np.shape(want)), want)


def test_the_nki_graph_alone_keeps_its_dma_bounds_check():
    k = _kernel("take_along_axis")
    x, i = CASES["take_along_axis"][1]
    with pytest.raises(nk.IndexOutOfRange, match=r"nki\.dma_gather: index \d+ \(partition \d+\)"):
        nk.nki.run(k.nki, {"x": x, "i": i, **k.constants})
    with pytest.raises(nk.IndexOutOfRange, match=r"indirect DMA: index \d+ \(partition \d+\)"):
        nk.simulate(k.nki_source(), {"x": x, "i": i})


def test_a_64_bit_index_array_gets_one_clear_error_never_a_wrapped_index():
    k = _kernel("take axis 0")
    x = CASES["take axis 0"][1][0]
    with pytest.raises(
        nk.InterpretError, match=r"input 'i' has dtype int64, expected int32 \(trn2 has no 64-bit"
    ):
        k(x, np.array([1, 2], np.int64))
    f = nk.jit(lambda x, i: np.take(x, i, axis=0), cache=False)
    big = np.array([1, 2**32 + 1], np.int64)  # as int32 it would wrap to 1, a valid row
    with pytest.raises(
        nk.InterpretError, match=r"input 'i': value 4294967297 at position \[1\] does not fit in int32"
    ):
        f(x, big)
    np.testing.assert_array_equal(f(x, np.array([1, -1], np.int64)), np.take(x, [1, -1], axis=0))


def test_run_ranks_checks_each_ranks_index_inputs():
    fn, args, op, value, pos, axis, size = CASES["take_along_axis"]
    g = nk.trace(fn).trace(*args)
    good = dict(zip(g.input_names, (args[0], np.zeros_like(args[1]))))
    with pytest.raises(nk.IndexOutOfRange, match=rf"rank 1: {op}: index {value} is out of bounds for axis 1"):
        nk.run_ranks(g, [good, dict(zip(g.input_names, args))], 2)
