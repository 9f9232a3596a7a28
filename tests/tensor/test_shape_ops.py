"""Data movement ops vs NumPy: transpose, reshape, broadcast_to, slice / indexing, concat,
stack, split, expand_dims, squeeze. They move values unchanged, so results are exact."""

import itertools

import numpy as np
import pytest

import nkigen_lite as nk

from .numpy_ref import data, f64

MODES = ("faithful", "float64")
MOVE_DTYPES = (nk.float32, nk.bfloat16, nk.float8_e5m2, nk.tfloat32, nk.int8, nk.uint32, nk.bool_)


def _run(shape, dtype, build, mode="faithful", seed=0):
    """Build ``build(b, x)`` on one input, run it; returns (input array, output Value, result)."""
    x = data(shape, dtype, seed)
    b = nk.Builder("t")
    v = b.add_input("x", shape, dtype)
    out = build(b, v)
    b.set_outputs({"y": out})
    return x, out, nk.run(b.graph, {"x": x}, mode=mode)["y"]


def _same(got, want, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    np.testing.assert_array_equal(f64(got), f64(want), err_msg=what)


@pytest.mark.parametrize("mode", MODES)
def test_transpose_every_permutation(mode):
    for d in MOVE_DTYPES:
        for shape in [(2, 3), (2, 3, 4), (1, 2, 1, 3)]:
            for perm in itertools.permutations(range(len(shape))):
                for axes in (perm, [p - len(shape) for p in perm]):
                    x, _, got = _run(shape, d, lambda b, v, a=axes: b.transpose(v, a), mode)
                    _same(got, np.transpose(x, perm), f"transpose {shape} {axes} {d}")
            x, _, got = _run(shape, d, lambda b, v: v.T, mode)
            _same(got, x.T, f"{shape}.T")
            x, _, got = _run(shape, d, lambda b, v: b.swapaxes(v, 0, -1), mode)
            _same(got, np.swapaxes(x, 0, -1), f"swapaxes {shape}")


@pytest.mark.parametrize("mode", MODES)
def test_reshape_including_minus_one_and_rank_0(mode):
    cases = [
        ((2, 3, 4), (6, 4)),
        ((2, 3, 4), (-1,)),
        ((2, 3, 4), (4, -1, 2)),
        ((1,), ()),
        ((), (1, 1)),
        ((6,), (1, 6, 1)),
        ((2, 3), 6),
        ((2, 2), (-1, 1)),
    ]
    for d in MOVE_DTYPES:
        for src, dst in cases:
            x, out, got = _run(src, d, lambda b, v, s=dst: b.reshape(v, s), mode)
            _same(got, np.reshape(x, dst), f"reshape {src} -> {dst} {d}")
            x, out, got = _run(src, d, lambda b, v, s=dst: v.reshape(s), mode)
            _same(got, np.reshape(x, dst), f"value.reshape {src} -> {dst}")
    x, _, got = _run((2, 3), nk.float32, lambda b, v: v.reshape(3, 2))
    _same(got, x.reshape(3, 2), "reshape(*dims)")


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_to(mode):
    cases = [((), (2, 3)), ((1,), (4,)), ((3,), (2, 3)), ((2, 1), (2, 5)), ((1, 3, 1), (2, 3, 4))]
    for d in MOVE_DTYPES:
        for src, dst in cases:
            x, _, got = _run(src, d, lambda b, v, s=dst: b.broadcast_to(v, s), mode)
            _same(got, np.broadcast_to(x, dst), f"broadcast_to {src} -> {dst} {d}")


SLICES = [
    slice(None),
    slice(1, None),
    slice(None, -1),
    slice(None, None, -1),
    slice(-2, None),
    slice(None, None, 2),
    slice(4, 0, -2),
    slice(-1, -5, -1),
    slice(10, None),
    slice(-100, 100),
    slice(3, 1),
    slice(None, None, -3),
    slice(2, 3),
]


@pytest.mark.parametrize("mode", MODES)
def test_slice_with_python_semantics(mode):
    """Every pair of these slices on a (5, 4) tensor, through both b.slice and x[...]."""
    for d in (nk.float32, nk.int8, nk.bfloat16):
        for s0 in SLICES:
            for s1 in SLICES:
                x, _, got = _run((5, 4), d, lambda b, v, s0=s0, s1=s1: v[s0, s1], mode)
                _same(got, x[s0, s1], f"x[{s0}, {s1}] {d}")
                x, _, got = _run(
                    (5, 4),
                    d,
                    lambda b, v, s0=s0, s1=s1: b.slice(
                        v, [s0.start, s1.start], [s0.stop, s1.stop], [s0.step, s1.step]
                    ),
                    mode,
                )
                _same(got, x[s0, s1], f"b.slice {s0}, {s1} {d}")


INDEXES = [
    0,
    -1,
    3,
    (1, 2),
    (-1, -2, 0),
    (slice(None), 1),
    (Ellipsis, 0),
    (0, Ellipsis),
    (None,),
    (None, 1),
    (Ellipsis, None),
    (slice(None), None, slice(None, None, -1)),
    (1, None, Ellipsis, -1),
    (slice(1, 3), Ellipsis, slice(None, None, 2)),
    Ellipsis,
    (),
    (0, 1, 2),
    (Ellipsis, 1, None),
    (np.int64(2),),
    (None, None, 0),
]


@pytest.mark.parametrize("mode", MODES)
def test_basic_indexing_matches_numpy(mode):
    for d in (nk.float32, nk.uint8, nk.bool_):
        for key in INDEXES:
            x, out, got = _run((4, 3, 5), d, lambda b, v, key=key: v[key], mode)
            want = x[key]
            assert out.shape == want.shape, f"x[{key!r}]"
            _same(got, np.asarray(want), f"x[{key!r}] {d}")


def test_indexing_rank_0_and_1():
    x, _, got = _run((), nk.float32, lambda b, v: v[None])
    _same(got, x[None], "scalar[None]")
    x, _, got = _run((), nk.float32, lambda b, v: v[...])
    _same(got, x[...], "scalar[...]")
    x, _, got = _run((6,), nk.int32, lambda b, v: v[-1])
    _same(got, np.asarray(x[-1]), "vector[-1]")


@pytest.mark.parametrize("mode", MODES)
def test_concat_and_stack(mode):
    rng_shapes = [
        ((2, 3), (4, 3), 0),
        ((2, 3), (2, 1), 1),
        ((2, 3), (2, 2), -1),
        ((3,), (2,), 0),
        ((1, 2, 3), (1, 2, 3), -2),
    ]
    for sa, sb, axis in rng_shapes:
        for ta, tb in [
            (nk.float32, nk.float32),
            (nk.int8, nk.uint8),
            (nk.bfloat16, nk.float16),
            (nk.bool_, nk.int16),
            (nk.float8_e4m3, nk.bfloat16),
        ]:
            a, c = data(sa, ta, 1), data(sb, tb, 2)
            b = nk.Builder("t")
            va, vb = b.add_input("a", sa, ta), b.add_input("b", sb, tb)
            out = b.concat([va, vb, va], axis)
            b.set_outputs({"y": out})
            got = nk.run(b.graph, {"a": a, "b": c}, mode=mode)["y"]
            want = np.concatenate([f64(a), f64(c), f64(a)], axis)
            assert got.shape == want.shape == out.shape
            np.testing.assert_array_equal(f64(got), want, err_msg=f"concat {sa} {sb} {axis} {ta} {tb}")
    for axis in (0, 1, -1, -3):
        b = nk.Builder("t")
        xs = [b.add_input(f"x{i}", (2, 3), nk.float32) for i in range(3)]
        b.set_outputs({"y": b.stack(xs, axis)})
        arrays = [data((2, 3), nk.float32, i) for i in range(3)]
        got = nk.run(b.graph, {f"x{i}": a for i, a in enumerate(arrays)}, mode=mode)["y"]
        _same(got, np.stack(arrays, axis), f"stack axis {axis}")


def test_concat_of_one_tensor_is_that_tensor():
    b = nk.Builder("t")
    x = b.add_input("x", (2,), nk.float32)
    assert b.concat([x]) is x and b.concatenate([x], -1) is x


@pytest.mark.parametrize("how", [2, 3, [1], [1, 4], [-2], [3, 1], [0], [10], [-10, 2], [4, -1]])
def test_split_matches_numpy(how):
    x = np.arange(24, dtype=np.int32).reshape(6, 4)
    for axis in (0, -2):
        if isinstance(how, int) and 6 % how:
            continue
        b = nk.Builder("t")
        v = b.add_input("x", (6, 4), nk.int32)
        parts = b.split(v, how, axis)
        b.set_outputs({f"p{i}": p for i, p in enumerate(parts)})
        got = nk.run(b.graph, {"x": x})
        want = np.split(x, how, axis)
        assert len(parts) == len(want)
        for i, w in enumerate(want):
            _same(got[f"p{i}"], w, f"split {how} axis {axis} part {i}")


def test_expand_dims_and_squeeze():
    x = data((2, 1, 3), nk.float32, 0)
    for axis in (0, 1, -1, (0, 2), (-1, 0)):
        _, _, got = _run((2, 1, 3), nk.float32, lambda b, v, a=axis: b.expand_dims(v, a))
        _same(got, np.expand_dims(x, axis), f"expand_dims {axis}")
    for axis in (None, 1, -2, (1,)):
        _, _, got = _run((2, 1, 3), nk.float32, lambda b, v, a=axis: b.squeeze(v, a))
        _same(got, np.squeeze(x, axis), f"squeeze {axis}")
    _, _, got = _run((1, 1), nk.int8, lambda b, v: b.squeeze(v))
    assert got.shape == ()


def test_no_op_shape_calls_add_no_ops():
    b = nk.Builder("t")
    x = b.add_input("x", (2, 3), nk.float32)
    s = b.add_input("s", (3,), nk.float32)
    assert b.transpose(x, (0, 1)) is x and b.reshape(x, (2, -1)) is x
    assert b.broadcast_to(x, (2, 3)) is x and x[:, :] is x and x[...] is x
    assert s.T is s
    assert len(b.graph.body) == 0
