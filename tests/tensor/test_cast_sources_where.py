"""cast between every pair of dtypes, full / iota / constant of every dtype, and where."""

import numpy as np
import pytest

import nkigen_lite as nk

from .numpy_ref import data, f64, saturating_to_int, storage

MODES = ("faithful", "float64")
SPECIAL = [
    0.0,
    -0.0,
    0.5,
    -0.5,
    1.5,
    -1.5,
    2.9,
    -2.9,
    100.7,
    -100.7,
    300.2,
    -300.2,
    7e4,
    1e10,
    -1e10,
    3.4e38,
    np.inf,
    -np.inf,
    np.nan,
]


def _source_values(d):
    if d.is_float:
        return storage(SPECIAL, d)
    if d.is_bool:
        return np.array([True, False, True])
    info = np.iinfo(d.np_dtype)
    return np.array([0, 1, 2, 100, info.max, info.min, info.max - 1], dtype=d.np_dtype)


def _expected_cast(x, src, dst, mode):
    if dst.is_bool:
        return f64(x) != 0
    if dst.is_int:
        if src.is_float:
            return saturating_to_int(x, dst)
        return x.astype(dst.np_dtype)  # NumPy's integer conversion (wraps)
    with np.errstate(over="ignore", invalid="ignore"):
        r = storage(f64(x), dst)  # a cast rounds to its dtype in both modes (the oracle too)
    return f64(r) if mode == "float64" else r


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src", nk.ALL_DTYPES, ids=str)
def test_cast_to_every_dtype(src, mode):
    x = _source_values(src)
    for dst in nk.ALL_DTYPES:
        b = nk.Builder("t")
        v = b.add_input("x", x.shape, src)
        c = v.astype(dst)
        assert c.dtype is dst
        b.set_outputs({"y": c})
        got = nk.run(b.graph, {"x": x}, mode=mode)["y"]
        want = _expected_cast(x, src, dst, mode)
        what = f"cast {src} -> {dst} ({mode})"
        assert got.dtype == want.dtype, what
        np.testing.assert_array_equal(f64(got), f64(want), err_msg=what)
        if dst.is_float and mode == "faithful":  # -0.0 keeps its sign
            np.testing.assert_array_equal(np.signbit(f64(got)), np.signbit(f64(want)), err_msg=what)


def test_cast_to_same_dtype_adds_no_op():
    b = nk.Builder("t")
    x = b.add_input("x", (2,), nk.bfloat16)
    assert b.cast(x, nk.bfloat16) is x and x.astype("bf16") is x
    assert [op.name for op in b.graph.ops] == []


FULL_VALUES = {
    "float": [0.0, -0.0, 1.0, -2.5, 0.1, np.inf, -np.inf, np.nan, 1e6],
    "int": [0, 1, -7, 100],
    "uint": [0, 1, 7, 200],
    "bool": [True, False],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", nk.ALL_DTYPES, ids=str)
def test_full_of_every_dtype(d, mode):
    kind = "float" if d.is_float else "bool" if d.is_bool else "int" if d.is_signed else "uint"
    for value in FULL_VALUES[kind]:
        for shape in [(), (3,), (2, 1, 3)]:
            b = nk.Builder("t")
            b.set_outputs({"y": b.full(shape, value, d)})
            got = nk.run(b.graph, {}, mode=mode)["y"]
            want = np.full(shape, value, np.float64)
            with np.errstate(over="ignore"):  # a constant holds its dtype's values in both modes
                want = storage(want, d) if d.is_float else want.astype(d.np_dtype)
            if mode == "float64" and d.is_float:
                want = f64(want)
            what = f"full({shape}, {value}, {d}) {mode}"
            assert got.shape == shape and got.dtype == want.dtype, what
            np.testing.assert_array_equal(f64(got), f64(want), err_msg=what)
            np.testing.assert_array_equal(np.signbit(f64(got)), np.signbit(f64(want)), err_msg=what)


@pytest.mark.parametrize("d", [d for d in nk.ALL_DTYPES if not d.is_bool], ids=str)
def test_iota_of_every_dtype_and_axis(d):
    for shape in [(5,), (3, 4), (2, 3, 4)]:
        for axis in range(-len(shape), len(shape)):
            b = nk.Builder("t")
            b.set_outputs({"y": b.iota(shape, axis, d)})
            got = nk.run(b.graph, {})["y"]
            n = shape[axis]
            idx = np.arange(n).reshape([n if i == axis % len(shape) else 1 for i in range(len(shape))])
            want = (
                storage(np.broadcast_to(idx, shape), d)
                if d.is_float
                else np.broadcast_to(idx, shape).astype(d.np_dtype)
            )
            np.testing.assert_array_equal(f64(got), f64(want), err_msg=f"iota {shape} axis {axis} {d}")
    b = nk.Builder("t")
    assert b.arange(4).dtype is nk.int32 and b.arange(4).shape == (4,)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d", nk.ALL_DTYPES, ids=str)
def test_constant_of_every_dtype(d, mode):
    for shape in [(), (1,), (2, 3)]:
        x = data(shape, d, seed=3)
        b = nk.Builder("t")
        b.set_outputs({"y": b.constant(x, d)})
        got = nk.run(b.graph, {}, mode=mode)["y"]
        want = f64(x) if (mode == "float64" and d.is_float) else x
        assert got.dtype == want.dtype and got.shape == shape
        np.testing.assert_array_equal(f64(got), f64(want))


def test_constant_from_python_data_narrows_like_numpy():
    b = nk.Builder("t")
    assert b.constant([1.5, 2.5]).dtype is nk.float32
    assert b.constant([[1, 2], [3, 4]]).dtype is nk.int32
    assert b.constant([True, False]).dtype is nk.bool_
    assert b.constant(np.array([1, 2], np.uint64)).dtype is nk.uint32
    c = b.constant([0.0, -0.0])  # not uniform bit-wise: stays a dense constant
    b.set_outputs({"y": c})
    assert c.owner.name == "tensor.constant"
    assert list(np.signbit(nk.run(b.graph, {})["y"])) == [False, True]


@pytest.mark.parametrize("mode", MODES)
def test_where_broadcasts_promotes_and_takes_scalars(mode):
    rng = np.random.default_rng(0)
    cases = [
        ((2, 1), nk.float32, (3,), nk.float32, ()),
        ((3,), nk.float16, (2, 3), nk.float32, (2, 1)),
        ((), nk.bfloat16, (4,), nk.float16, (4,)),
        ((2, 3), nk.int8, (3,), nk.uint8, (1, 3)),
        ((3,), nk.float8_e4m3, (3,), nk.bfloat16, (3,)),
        ((2, 2), nk.int32, (2, 2), nk.float32, (2, 2)),
    ]
    for sx, tx, sy, ty, sc in cases:
        x, y = data(sx, tx, 1), data(sy, ty, 2)
        c = rng.random(sc) < 0.5
        b = nk.Builder("t")
        vx, vy, vc = b.add_input("x", sx, tx), b.add_input("y", sy, ty), b.add_input("c", sc, nk.bool_)
        outs = {
            "w": (b.where(vc, vx, vy), np.where(c, f64(x), f64(y))),
            "s": (b.where(vc, vx, 0.5), np.where(c, f64(x), 0.5)),
            "t": (b.where(vc, 2, vy), np.where(c, 2.0, f64(y))),
        }
        b.set_outputs({k: v for k, (v, _) in outs.items()})
        r = nk.run(b.graph, {"x": x, "y": y, "c": c}, mode=mode)
        for name, (v, ref) in outs.items():
            assert r[name].shape == v.shape == ref.shape
            if not v.dtype.is_float:
                ref = ref.astype(v.dtype.np_dtype)
            elif mode == "faithful":
                ref = storage(ref, v.dtype)
            np.testing.assert_array_equal(f64(r[name]), f64(ref), err_msg=f"{name}: where({tx}, {ty}) {mode}")


def test_where_with_numeric_condition_tests_against_zero():
    b = nk.Builder("t")
    x = b.add_input("x", (4,), nk.float32)
    b.set_outputs({"y": b.where(x, 1.0, -1.0), "z": b.where(True, x, 0.0)})
    xa = np.array([0.0, -0.0, 2.0, np.nan], np.float32)
    r = nk.run(b.graph, {"x": xa})
    np.testing.assert_array_equal(r["y"], np.where(xa, 1.0, -1.0).astype(np.float32))
    np.testing.assert_array_equal(r["z"], xa)
