"""@nk.trace with traced integer indices (tensor/trace_gather.py): ``table[ids]``, ``np.take``,
``x[t]`` / ``x[t] = v`` (dynamic slices), ``x[ids] = v`` (scatter rows), ``np.take_along_axis``,
``np.put_along_axis``, strided writes, and the IO alias of a mutated argument.

Every case is compared with NumPy itself run on float64 copies (integers exactly) through the
tensor interpreter (float64 mode), the compiled kernel on the NKI interpreter (``Kernel.run``)
and the emitted module on the simulator (``nk.simulate``); float32 results use assert_close's
float32 tolerance (moves only, so they are in fact exact)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing import assert_close

R = np.random.default_rng(13)
TABLE = R.standard_normal((16, 8)).astype(np.float32)
X = R.standard_normal((6, 10)).astype(np.float32)
X3 = R.standard_normal((3, 5, 4)).astype(np.float32)
CACHE = R.standard_normal((2, 12, 8)).astype(np.float32)  # (heads, positions, head dim)


def i32(a):
    return np.asarray(a, np.int32)


def _reference(fn, args):
    outs = fn(*[a.astype(np.float64) if a.dtype.kind == "f" else a.copy() for a in args])
    return outs if isinstance(outs, tuple) else (outs,)


def check(fn, *args):
    """``fn`` traced, run three ways and compared with NumPy on float64 copies."""
    want = _reference(fn, args)
    native = fn(*[a.copy() for a in args])
    native = native if isinstance(native, tuple) else (native,)
    g = nk.trace(fn).trace(*[a.copy() for a in args])
    feeds = dict(zip(g.input_names, [a.copy() for a in args]))
    runs = {"tensor interpreter": nk.run(g, feeds, mode="float64")}
    k = nk.compile(g)
    runs["Kernel.run"] = k.run(feeds)
    runs["nk.simulate"] = nk.simulate(k, feeds)
    for how, out in runs.items():
        got = [out[n] for n in g.outputs][: len(want)]
        for n, (gv, wv, nv) in enumerate(zip(got, want, native)):
            wv, dt = np.asarray(wv), nk.get_dtype(np.asarray(nv).dtype)
            assert gv.shape == wv.shape, f"{how}, output {n}: shape {gv.shape}, NumPy {wv.shape}"
            if how != "tensor interpreter":
                assert gv.dtype == np.asarray(nv).dtype, f"{how}, output {n}: dtype {gv.dtype}"
            if wv.dtype.kind == "f":
                assert_close(gv, wv, dt, what=f"{how}, output {n}")
            else:
                np.testing.assert_array_equal(gv, wv, err_msg=f"{how}, output {n}")
    return g, k


def _copy_set(key):
    def fn(x, *rest):
        y = x.copy()
        y[key(*rest) if callable(key) else key] = rest[-1]
        return y

    return fn


READS = {
    "table[ids] 1-D": (lambda t, i: t[i], TABLE, i32([3, 0, 15, 3, 7])),
    "table[ids] 2-D ids": (lambda t, i: t[i], TABLE, i32([[1, 2, 3], [15, 0, 9]])),
    "table[ids] negative ids": (lambda t, i: t[i], TABLE, i32([-1, -16, 4])),
    "table[ids] int8 ids": (lambda t, i: t[i], TABLE, np.array([5, -2, 0], np.int8)),
    "table[ids] uint32 ids": (lambda t, i: t[i], TABLE, np.array([5, 15, 0], np.uint32)),
    "table[ids] 0-d id": (lambda t, i: t[i], TABLE, i32(9)),
    "table[ids] of a 3-D table": (lambda t, i: t[i], X3, i32([2, 0, -1, 1])),
    "x[:, ids]": (lambda x, i: x[:, i], X, i32([9, 0, 4, 4])),
    "x[..., ids] 3-D": (lambda x, i: x[..., i], X3, i32([[3, 0], [1, -1]])),
    "x[1, ids] (adjacent advanced)": (lambda x, i: x[1, i], X3, i32([4, 0, 2])),
    "x[ids, :, 1] (advanced to the front)": (lambda x, i: x[i, :, 1], X3, i32([2, 0])),
    "x[1:5, ids]": (lambda x, i: x[1:5, i], X, i32([7, 2])),
    "np.take axis 0": (lambda t, i: np.take(t, i, axis=0), TABLE, i32([3, 0, 15])),
    "np.take axis 1": (lambda x, i: np.take(x, i, axis=1), X, i32([[5, 0], [9, 9]])),
    "np.take axis -1 of 3-D": (lambda x, i: np.take(x, i, axis=-1), X3, i32([3, 1, 0])),
    "np.take axis=None": (lambda x, i: np.take(x, i), X, i32([0, 59, 17, -1])),
    "np.take mode=wrap": (lambda x, i: np.take(x, i, axis=0, mode="wrap"), X, i32([7, -8, 13, 2])),
    "np.take mode=clip": (lambda x, i: np.take(x, i, axis=1, mode="clip"), X, i32([-3, 40, 4])),
    "x.take method": (lambda x, i: x.take(i, axis=1), X, i32([1, 2])),
    "x[t]": (lambda x, t: x[t], X, i32(4)),
    "x[t] negative t": (lambda x, t: x[t], X, i32(-2)),
    "x[:, t]": (lambda x, t: x[:, t], X, i32(7)),
    "x[t, 2:6]": (lambda x, t: x[t, 2:6], X, i32(1)),
    "x[:, t, None, 1:3] 3-D": (lambda x, t: x[:, t, None, 1:3], X3, i32(3)),
    "x[t, s] (two traced scalars)": (lambda x, t, s: x[t, s], X, i32(5), i32(-1)),
    "cache[:, pos] (a KV-cache read)": (lambda c, p: c[:, p], CACHE, i32(11)),
    "x[arange, ids] (several index arrays)": (lambda x, i: x[np.arange(6), i], X, i32([9, 0, 3, -1, 5, 5])),
    "x[ids, :, jds] (apart: to the front)": (
        lambda x, i, j: x[i, :, j],
        X3,
        i32([[0, 2], [1, -1]]),
        i32([3, -4]),
    ),
    "x[:, ids, jds] (adjacent)": (lambda x, i, j: x[:, i, j], X3, i32([[0, 4], [1, -1]]), i32([3, 0])),
    "x[t, :, ids] (0-d with an array)": (lambda x, t, j: x[t, :, j], X3, i32(-1), i32([2, 0, 1])),
    "np.take_along_axis axis 1": (
        lambda x, i: np.take_along_axis(x, i, axis=1),
        X,
        R.integers(-10, 10, (6, 3)).astype(np.int32),
    ),
    "np.take_along_axis axis 0": (
        lambda x, i: np.take_along_axis(x, i, axis=0),
        X,
        R.integers(0, 6, (2, 10)).astype(np.int32),
    ),
    "np.take_along_axis broadcast idx (1, k)": (
        lambda x, i: np.take_along_axis(x, i, axis=1),
        X,
        i32([[0, 9, 3]]),
    ),
    "np.take_along_axis broadcast x (n, 1)": (
        lambda x, i: np.take_along_axis(x[:, :1], i, axis=0),
        X,
        i32([[5, 0, 1, 1]]),
    ),
    "np.take_along_axis axis=None": (lambda x, i: np.take_along_axis(x, i, axis=None), X, i32([59, 0, 7])),
    "np.take_along_axis 3-D axis -1": (
        lambda x, i: np.take_along_axis(x, i, axis=-1),
        X3,
        R.integers(0, 4, (3, 5, 2)).astype(np.int32),
    ),
    "np.take_along_axis of argmax (keepdims)": (
        lambda x: np.take_along_axis(x, np.argmax(x, axis=1, keepdims=True), axis=1),
        X,
    ),
    "np.take_along_axis static idx": (
        lambda x: np.take_along_axis(x, np.array([[1], [0], [9], [2], [3], [-1]]), axis=1),
        X,
    ),
}


@pytest.mark.parametrize("name", list(READS))
def test_traced_index_reads_match_numpy(name):
    fn, *args = READS[name]
    check(fn, *args)


def _put(axis, values=0.0):
    def fn(x, i):
        y = x.copy()
        np.put_along_axis(y, i, values, axis=axis)
        return y

    return fn


def _set_t(key_fn, value_fn):
    def fn(x, *t):
        y = x.copy()
        y[key_fn(*t)] = value_fn(x, *t)
        return y

    return fn


WRITES = {
    "x[t] = row": (_set_t(lambda t: t, lambda x, t: x[0] * 2.0), X, i32(3)),
    "x[t] = scalar, negative t": (_set_t(lambda t: t, lambda x, t: -7.5), X, i32(-1)),
    "x[:, t] = column": (_set_t(lambda t: (slice(None), t), lambda x, t: x[:, 0] + 1.0), X, i32(8)),
    "x[t, 2:5] = v": (_set_t(lambda t: (t, slice(2, 5)), lambda x, t: x[0, :3]), X, i32(5)),
    "x[t, ::-1] = v (reversed slice)": (
        _set_t(lambda t: (t, slice(None, None, -1)), lambda x, t: x[1]),
        X,
        i32(2),
    ),
    "x[t, s] = scalar": (_set_t(lambda t, s: (t, s), lambda x, t, s: 3.0), X, i32(4), i32(-3)),
    "cache[:, pos] = k (a KV-cache write)": (
        _set_t(lambda p: (slice(None), p), lambda c, p: c[:, 0] * 0.5),
        CACHE,
        i32(6),
    ),
    "cache[1, pos] = k": (_set_t(lambda p: (1, p), lambda c, p: c[0, 0]), CACHE, i32(0)),
    "x[ids] = rows": (_set_t(lambda i: i, lambda x, i: x[:3] * 3.0), X, i32([5, 0, -3])),
    "x[ids] = scalar": (_set_t(lambda i: i, lambda x, i: 0.0), X, i32([[1, 4], [2, 2]])),
    "x[ids] = rows, repeated id (last wins)": (
        _set_t(lambda i: i, lambda x, i: x[:4] + 1.0),
        X,
        i32([2, 5, 2, 1]),
    ),
    "x[:, ids] = v": (_set_t(lambda i: (slice(None), i), lambda x, i: x[:, :2] - 1.0), X, i32([9, 3])),
    "x[..., ids] = v 3-D": (_set_t(lambda i: (Ellipsis, i), lambda x, i: 1.25), X3, i32([0, 3])),
    "x[static ids] = rows": (_set_t(lambda: [4, 1], lambda x: x[:2] * 2.0), X),
    "x[bool 1-D mask] = v": (_set_t(lambda: np.array([1, 0, 1, 0, 0, 1], bool), lambda x: 9.0), X),
    "x[::2] = v (strided rows)": (_set_t(lambda: slice(None, None, 2), lambda x: x[1::2] * 2.0), X),
    "x[:, 1::3] = v (strided columns)": (_set_t(lambda: (slice(None), slice(1, None, 3)), lambda x: -1.0), X),
    "np.put_along_axis axis 1 scalar": (_put(1), X, R.integers(-10, 10, (6, 2)).astype(np.int32)),
    "np.put_along_axis axis 0 values": (
        _put(0, np.arange(20, dtype=np.float32).reshape(2, 10)),
        X,
        R.integers(0, 6, (2, 10)).astype(np.int32),
    ),
    "np.put_along_axis broadcast idx": (_put(1, 5.0), X, i32([[3, 0]])),
    "np.put_along_axis axis=None": (_put(None, -2.0), X, i32([0, 59, 33])),
    "np.put_along_axis repeated index": (
        _put(1, np.arange(18, dtype=np.float32).reshape(6, 3)),
        X,
        np.tile(i32([[4, 1, 4]]), (6, 1)),
    ),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_traced_index_writes_match_numpy(name):
    fn, *args = WRITES[name]
    check(fn, *args)


def test_an_int_array_write_casts_the_value_and_keeps_the_dtype():
    def fn(x, t):
        y = x.copy()
        y[t] = 2.9  # truncated as NumPy's astype does
        return y

    xi = i32(np.arange(12).reshape(3, 4))
    check(fn, xi, i32(1))


def test_gather_reads_only_the_selected_rows():
    big = np.zeros((4096, 64), np.float32)
    g = nk.trace(lambda t, i: t[i]).trace(big, i32(np.arange(8)))
    assert [op.name for op in g.ops if op.name.startswith("tensor.gather")] == ["tensor.gather_rows"]
    st = nk.compile(g).stats()
    assert st.dma_bytes < 4 * 64 * 4 * 8, st  # 8 rows of 256 bytes, plus ids and output


def test_a_traced_position_write_to_an_argument_becomes_an_io_alias():
    def decode_write(cache, pos, k):
        cache[:, pos] = k  # mutates the argument: NumPy changes the caller's array

    k_new = R.standard_normal((2, 8)).astype(np.float32)
    g = nk.trace(decode_write).trace(CACHE.copy(), i32(5), k_new)
    assert list(g.outputs) == ["cache_out"]
    kern = nk.compile(g)
    assert kern.io.aliases == {"cache_out": "cache"}
    want = CACHE.astype(np.float64)
    want[:, 5] = k_new
    feeds = {"cache": CACHE.copy(), "pos": i32(5), "k": k_new}
    for got in (kern.run(feeds)["cache_out"], nk.simulate(kern, feeds)["cache_out"]):
        assert_close(got, want, nk.float32)


def test_a_strided_write_to_an_argument_becomes_an_io_alias():
    def clear_even_rows(x):
        x[::2] = 0.0
        return x

    g = nk.trace(clear_even_rows).trace(X.copy())
    kern = nk.compile(g)
    assert kern.io.aliases == {"y": "x"}
    want = X.astype(np.float64)
    want[::2] = 0.0
    assert_close(kern.run({"x": X.copy()})["y"], want, nk.float32)


def test_an_out_of_range_traced_index_fails_at_run_time():
    g = nk.trace(lambda t, i: t[i]).trace(TABLE, i32([0, 1]))
    with pytest.raises(nk.InterpretError, match=r"tensor\.gather_rows: index 16"):
        nk.run(g, {"t": TABLE, "i": i32([0, 16])})
    k = nk.compile(g)
    with pytest.raises(nk.InterpretError, match="16"):
        k.run({"t": TABLE, "i": i32([0, -17])})


def test_an_out_of_range_traced_position_write_fails_at_run_time():
    g = nk.trace(_set_t(lambda t: t, lambda x, t: 0.0)).trace(X, i32(0))
    with pytest.raises(nk.InterpretError, match="dynamic_update_slice"):
        nk.run(g, dict(zip(g.input_names, (X, i32(6)))))


def _two_traced(x, i):
    y = x.copy()
    y[i, i] = 0.0
    return y


@pytest.mark.parametrize(
    "fn, args, match",
    [
        (lambda x: x[x], (X,), r"x\[\.\.\.\]: indices must be integers"),
        (lambda x, i: x[i, [0, 1, 2]], (X, i32([0, 1])), "could not be broadcast together"),
        (lambda x, i: x[i, None, i], (X, i32([0, 1])), "None .np.newaxis. next to several index arrays"),
        (_two_traced, (X, i32([0, 1])), "assignment through more than one index array"),
        (
            _set_t(lambda t: (t, slice(None, None, 2)), lambda x, t: 0.0),
            (X, i32(0)),
            "step 2 next to a traced index",
        ),
        (
            _set_t(lambda i: (i, slice(1, 3)), lambda x, i: 0.0),
            (X, i32([0])),
            "needs ':' or '...' on every other axis",
        ),
        (
            _set_t(lambda i: i, lambda x, i: x[:3]),
            (X, i32([0, 1])),
            r"could not broadcast a value of shape \(3, 10\)",
        ),
        (lambda x, i: np.take_along_axis(x, i, axis=1), (X, i32([1, 2])), "same number of dimensions"),
        (
            lambda x, i: np.take_along_axis(x, i, axis=1),
            (X, i32([[1], [2]])),
            r"do not broadcast against the array",
        ),
        (
            lambda x, i: np.take_along_axis(x, i, axis=None),
            (X, i32([[1]])),
            "with axis=None the indices must be 1-D",
        ),
        (lambda x: np.take_along_axis(x, np.ones((6, 1)), axis=1), (X,), "indices must be an integer array"),
        (
            lambda x: np.take_along_axis(x, np.full((6, 1), 10), axis=1),
            (X,),
            "index 10 is out of bounds for axis 1",
        ),
        (
            lambda x, i: np.put_along_axis(np.zeros((6, 10)), i, x[:, :1], 1),
            (X, i32([[0]] * 6)),
            "destination must be a traced array",
        ),
        (lambda x, i: np.take(x, i, axis=0, mode="nearest"), (X, i32([0])), "mode='nearest' is not one of"),
    ],
)
def test_traced_index_errors_name_the_op_and_rule(fn, args, match):
    with pytest.raises(nk.TraceError, match=match):
        nk.trace(fn).trace(*args)
