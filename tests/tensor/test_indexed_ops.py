"""The indexed ops at the tensor level (tensor/ops/indexed.py) against NumPy written here
independently (loops and plain indexing): gather_rows, scatter_rows, take_along_axis, one_hot,
dynamic_slice, dynamic_update_slice. They move values, so results are exact (bit for bit) in
f32, bf16 and int32; bad indices are one InterpretError naming the op, bad arguments one
BuildError naming the op."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk

DTYPES = [(nk.float32, np.float32), (nk.bfloat16, ml_dtypes.bfloat16), (nk.int32, np.int32)]
_ids = {"ids": lambda d: d[0].name}


def _data(shape, npd, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 8).astype(npd)


def _run(b, outs, ins):
    b.set_outputs(outs)
    return nk.run(b.graph, ins)


@pytest.mark.parametrize("dt", DTYPES, **_ids)
@pytest.mark.parametrize(
    ("table_shape", "ids_shape"),
    [((7,), (5,)), ((9, 4), ()), ((9, 4), (2, 3)), ((5, 2, 3), (4,)), ((1, 6), (3,))],
)
def test_gather_rows_matches_numpy_rows(dt, table_shape, ids_shape):
    b = nk.Builder("g")
    t = b.add_input("t", table_shape, dt[0])
    i = b.add_input("i", ids_shape, nk.int32)
    tv = _data(table_shape, dt[1])
    iv = np.random.default_rng(1).integers(0, table_shape[0], ids_shape).astype(np.int32)
    got = _run(b, {"y": b.gather_rows(t, i)}, {"t": tv, "i": iv})["y"]
    want = np.stack([tv[k] for k in iv.reshape(-1)]).reshape(ids_shape + table_shape[1:])
    assert got.dtype == tv.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_gather_rows_takes_uint32_ids():
    b = nk.Builder("g")
    t = b.add_input("t", (6, 2), nk.float32)
    i = b.add_input("i", (3,), nk.uint32)
    tv = _data((6, 2), np.float32)
    got = _run(b, {"y": b.gather_rows(t, i)}, {"t": tv, "i": np.array([5, 0, 5], np.uint32)})["y"]
    np.testing.assert_array_equal(got, tv[[5, 0, 5]])


@pytest.mark.parametrize("bad", [-1, 6, 2**31 - 1])
def test_gather_rows_out_of_range_is_one_interpret_error(bad):
    b = nk.Builder("g")
    t = b.add_input("t", (6, 2), nk.float32)
    i = b.add_input("i", (3,), nk.int32)
    b.set_outputs({"y": b.gather_rows(t, i)})
    # reworded in NumPy's terms (2026-11-29): value, axis and size, then the position
    with pytest.raises(
        nk.IndexOutOfRange,
        match=rf"tensor\.gather_rows: index {bad} is out of bounds for axis 0 with size 6 \(.*i\[1\]; "
        r"allowed \[0, 6\)",
    ):
        nk.run(b.graph, {"t": np.zeros((6, 2), np.float32), "i": np.array([0, bad, 1], np.int32)})


@pytest.mark.parametrize("dt", DTYPES, **_ids)
def test_scatter_rows_last_write_wins(dt):
    b = nk.Builder("s")
    d = b.add_input("d", (6, 3), dt[0])
    i = b.add_input("i", (2, 4), nk.int32)
    r = b.add_input("r", (2, 4, 3), dt[0])
    dv, rv = _data((6, 3), dt[1], 2), _data((2, 4, 3), dt[1], 3)
    iv = np.array([[1, 4, 1, 0], [4, 4, 2, 1]], np.int32)
    got = _run(b, {"y": b.scatter_rows(d, i, r)}, {"d": dv, "i": iv, "r": rv})["y"]
    want = dv.copy()
    for k, row in zip(iv.reshape(-1), rv.reshape(8, 3)):
        want[k] = row
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[1], rv[1, 3])  # id 1's last occurrence


def test_scatter_rows_out_of_range_and_bad_rows():
    b = nk.Builder("s")
    d = b.add_input("d", (4, 2), nk.float32)
    i = b.add_input("i", (2,), nk.int32)
    with pytest.raises(nk.BuildError, match=r"tensor\.scatter_rows: rows has shape \(3, 2\)"):
        b.scatter_rows(d, i, b.zeros((3, 2)))
    b.set_outputs({"y": b.scatter_rows(d, i, b.zeros((2, 2)))})
    with pytest.raises(nk.InterpretError, match=r"tensor\.scatter_rows: index 4 .* size 4 .*\[0, 4\)"):
        nk.run(b.graph, {"d": np.zeros((4, 2), np.float32), "i": np.array([0, 4], np.int32)})


@pytest.mark.parametrize("dt", DTYPES, **_ids)
@pytest.mark.parametrize(
    ("x_shape", "idx_shape", "axis"),
    [
        ((5, 7), (5, 3), 1),
        ((5, 7), (2, 7), 0),
        ((4, 6), (1, 2), 1),
        ((3, 1, 5), (3, 4, 2), 2),
        ((6,), (9,), 0),
    ],
)
def test_take_along_axis_matches_numpy(dt, x_shape, idx_shape, axis):
    b = nk.Builder("t")
    x = b.add_input("x", x_shape, dt[0])
    i = b.add_input("i", idx_shape, nk.int32)
    xv = _data(x_shape, dt[1], 4)
    n = x_shape[axis]
    iv = np.random.default_rng(5).integers(-n, n, idx_shape).astype(np.int32)
    got = _run(b, {"y": b.take_along_axis(x, i, axis - len(x_shape))}, {"x": xv, "i": iv})["y"]
    full = list(np.broadcast_shapes(idx_shape, tuple(1 if d == axis else s for d, s in enumerate(x_shape))))
    full[axis] = idx_shape[axis]
    want = np.empty(full, xv.dtype)
    ib = np.broadcast_to(iv, full)
    for pos in np.ndindex(*full):
        src = list(pos)
        src[axis] = ib[pos] % n
        src = [0 if x_shape[d] == 1 else c for d, c in enumerate(src)]
        want[pos] = xv[tuple(src)]
    np.testing.assert_array_equal(got, want)


def test_take_along_axis_errors():
    b = nk.Builder("t")
    x = b.add_input("x", (3, 4), nk.float32)
    with pytest.raises(nk.BuildError, match=r"tensor\.take_along_axis: idx has rank 1"):
        b.take_along_axis(x, b.constant(np.array([1], np.int32)), 1)
    with pytest.raises(
        nk.BuildError, match=r"tensor\.take_along_axis: idx must be int32 or uint32, got float32"
    ):
        b.take_along_axis(x, b.zeros((3, 1)), 1)
    i = b.add_input("i", (3, 1), nk.int32)
    b.set_outputs({"y": b.take_along_axis(x, i, 1)})
    with pytest.raises(
        nk.InterpretError, match=r"tensor\.take_along_axis: index -5 .* size 4 .*allowed \[-4, 4\)"
    ):
        nk.run(b.graph, {"x": np.zeros((3, 4), np.float32), "i": np.array([[0], [-5], [3]], np.int32)})


@pytest.mark.parametrize("out_dt", [nk.float32, nk.bfloat16, nk.int32, nk.bool_])
def test_one_hot_matches_a_loop_and_gives_zeros_outside_the_depth(out_dt):
    b = nk.Builder("o")
    i = b.add_input("i", (2, 5), nk.int32)
    iv = np.array([[0, 3, -1, 4, 5], [2, 2, 9, 1, 0]], np.int32)
    got = _run(b, {"y": b.one_hot(i, 5, out_dt)}, {"i": iv})["y"]
    want = np.zeros((2, 5, 5), np.float64)
    for (r, c), k in np.ndenumerate(iv):
        if 0 <= k < 5:
            want[r, c, k] = 1
    assert got.dtype == out_dt.np_dtype
    np.testing.assert_array_equal(got.astype(np.float64), want)


def test_one_hot_rejects_float_ids_and_bad_depth():
    b = nk.Builder("o")
    with pytest.raises(nk.BuildError, match=r"tensor\.one_hot: ids must be integers"):
        b.one_hot(b.zeros((3,)), 4)
    with pytest.raises(nk.BuildError, match=r"tensor\.one_hot: depth 0 must be positive"):
        b.one_hot(b.add_input("i", (3,), nk.int32), 0)


@pytest.mark.parametrize("dt", DTYPES, **_ids)
def test_dynamic_slice_matches_basic_slicing(dt):
    b = nk.Builder("d")
    x = b.add_input("x", (5, 8, 3), dt[0])
    p = b.add_input("p", (), nk.int32)
    q = b.add_input("q", (), nk.int32)
    xv = _data((5, 8, 3), dt[1], 6)
    b.set_outputs({"y": b.dynamic_slice(x, [p, q, 0], (2, 5, 3))})
    for pv, qv in [(0, 0), (3, 3), (1, 2)]:
        got = nk.run(b.graph, {"x": xv, "p": np.array(pv, np.int32), "q": np.array(qv, np.int32)})["y"]
        np.testing.assert_array_equal(got, xv[pv : pv + 2, qv : qv + 5, :])


@pytest.mark.parametrize("start", [-1, 4])
def test_dynamic_slice_window_must_fit(start):
    b = nk.Builder("d")
    x = b.add_input("x", (5, 8), nk.float32)
    p = b.add_input("p", (), nk.int32)
    b.set_outputs({"y": b.dynamic_slice(x, [p, 0], (2, 8))})
    with pytest.raises(
        nk.InterpretError,
        match=rf"tensor\.dynamic_slice: start {start} is out of bounds for axis 0 with size 5: a window "
        r"of 2 needs a start in \[0, 3\]",
    ):
        nk.run(b.graph, {"x": np.zeros((5, 8), np.float32), "p": np.array(start, np.int32)})


def test_dynamic_slice_build_errors():
    b = nk.Builder("d")
    x = b.add_input("x", (5, 8), nk.float32)
    with pytest.raises(nk.BuildError, match=r"tensor\.dynamic_slice: starts must be a list of 2"):
        b.dynamic_slice(x, [0], (1, 1))
    with pytest.raises(nk.BuildError, match=r"tensor\.dynamic_slice: sizes \[6, 1\] must give each dim"):
        b.dynamic_slice(x, [0, 0], (6, 1))
    with pytest.raises(nk.BuildError, match=r"tensor\.dynamic_slice: start 1 must be a 0-d int32"):
        b.dynamic_slice(x, [0, b.zeros(())], (1, 1))
    with pytest.raises(nk.BuildError, match=r"tensor\.dynamic_slice: start 1 must be a 0-d int32"):
        b.dynamic_slice(x, [0, b.zeros((2,), nk.int32)], (1, 1))


@pytest.mark.parametrize("dt", DTYPES, **_ids)
def test_dynamic_update_slice_matches_a_copy_and_assignment(dt):
    b = nk.Builder("u")
    c = b.add_input("c", (2, 10, 4), dt[0])
    k = b.add_input("k", (2, 1, 4), dt[0])
    p = b.add_input("p", (), nk.int32)
    b.set_outputs({"y": b.dynamic_update_slice(c, k, [0, p, 0])})
    cv, kv = _data((2, 10, 4), dt[1], 7), _data((2, 1, 4), dt[1], 8)
    for pv in (0, 9, 4):
        got = nk.run(b.graph, {"c": cv, "k": kv, "p": np.array(pv, np.int32)})["y"]
        want = cv.copy()
        want[:, pv, :] = kv[:, 0, :]
        np.testing.assert_array_equal(got, want)
    with pytest.raises(
        nk.InterpretError,
        match=r"tensor\.dynamic_update_slice: index 10 is out of bounds for axis 1 with size 10",
    ):
        nk.run(b.graph, {"c": cv, "k": kv, "p": np.array(10, np.int32)})
    with pytest.raises(nk.BuildError, match=r"tensor\.dynamic_update_slice: update \(3, 1, 4\) must fit"):
        b.dynamic_update_slice(c, b.zeros((3, 1, 4), dt[0]), [0, p, 0])


def test_gather_rows_rejects_float_ids_naming_the_op():
    b = nk.Builder("g")
    t = b.add_input("t", (4, 2), nk.float32)
    with pytest.raises(nk.BuildError, match=r"tensor\.gather_rows: ids must be int32 or uint32, got float32"):
        b.gather_rows(t, b.zeros((3,)))
    with pytest.raises(nk.BuildError, match=r"tensor\.gather_rows: table must have at least one dim"):
        b.gather_rows(b.zeros(()), b.add_input("i", (3,), nk.int32))
