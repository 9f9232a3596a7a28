"""`where` lowers to documented select_reduce forms and is bit-exact, also for inf, NaN, -0.0
and full-range int32 / uint32 values (expected values: np.where on the same inputs)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import SelectOp

RNG = np.random.default_rng(14)
SPECIALS = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1.5, -3.25, 3e38], np.float32)


def _floats(shape, dtype):
    x = RNG.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    idx = RNG.choice(flat.size, size=flat.size // 3, replace=False)
    flat[idx] = RNG.choice(SPECIALS, size=idx.size)
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def _ints(shape, np_dtype):
    info = np.iinfo(np_dtype)
    return RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=np.int64).astype(np_dtype)


def _bits_equal(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind == "f" or want.dtype.name == "bfloat16":
        gv, wv = got.view(f"u{want.itemsize}"), want.view(f"u{want.itemsize}")
        nan = np.isnan(want.astype(np.float32))
        assert np.array_equal(np.isnan(got.astype(np.float32)), nan), what
        assert np.array_equal(gv[~nan], wv[~nan]), what  # bit-exact, so -0.0 keeps its sign
    else:
        assert np.array_equal(got, want), what


def _check(graph, inputs, want):
    k = nk.compile(graph)
    for sel in (op for op in k.nki.walk() if isinstance(op, SelectOp)):
        assert sel.access("predicate").dtype.name in ("u8", "i8", "u16", "i16")
        assert sel.access("on_true").dtype.name not in ("i32", "u32", "tf32")
        f = sel.access("on_false")
        assert f is None or f.free_size == 1  # an fp32 scalar or a (P, 1) column
    for name, got in (("NKI interpreter", k.run(inputs)["y"]), ("simulator", nk.simulate(k, inputs)["y"])):
        _bits_equal(got, want, f"{graph.name} on the {name}")
    return k


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_where_full_tiles_exact_with_inf_nan(dtype):
    b = nk.Builder("where_ff")
    x = b.add_input("x", (256, 96), nk.get_dtype(dtype))
    y = b.add_input("y", (256, 96), nk.get_dtype(dtype))
    b.set_outputs({"y": b.where(x > y, x, y)})
    xs = _floats((256, 96), nk.get_dtype(dtype).np_dtype)
    ys = _floats((256, 96), nk.get_dtype(dtype).np_dtype)
    with np.errstate(invalid="ignore"):
        want = np.where(xs > ys, xs, ys)
    _check(b.graph, {"x": xs, "y": ys}, want)


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_where_int32_is_exact_without_int32_on_true(dtype):
    """The issue's reproducer: where(x > y, x, y) on 32-bit integers (full range)."""
    npd = np.dtype(dtype)
    b = nk.Builder("where_i32")
    x = b.add_input("x", (200, 64), nk.get_dtype(dtype))
    y = b.add_input("y", (200, 64), nk.get_dtype(dtype))
    b.set_outputs({"y": b.where(x > y, x, y)})
    xs, ys = _ints((200, 64), npd), _ints((200, 64), npd)
    k = _check(b.graph, {"x": xs, "y": ys}, np.where(xs > ys, xs, ys))
    assert not any(isinstance(op, SelectOp) for op in k.nki.walk())


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int16", "float32"])
def test_where_with_scalar_operands(dtype):
    npd = np.dtype(dtype)
    b = nk.Builder("where_imm")
    x = b.add_input("x", (130, 40), nk.get_dtype(dtype))
    hi = np.iinfo(npd).max if npd.kind in "iu" else np.float32(np.inf)
    b.set_outputs({"y": b.where(x > 3, x, hi), "z": b.where(x < 3, 7, x)})
    xs = _ints((130, 40), npd) if npd.kind in "iu" else _floats((130, 40), npd)
    k = nk.compile(b.graph)
    for name, got in (("interp", k.run({"x": xs})), ("sim", nk.simulate(k, {"x": xs}))):
        _bits_equal(got["y"], np.where(xs > 3, xs, np.array(hi, npd)), f"y {name}")
        _bits_equal(got["z"], np.where(xs < 3, np.array(7, npd), xs), f"z {name}")


def test_where_per_partition_on_false_is_a_column():
    b = nk.Builder("where_col")
    x = b.add_input("x", (128, 256), nk.float32)
    m = b.add_input("m", (128, 1), nk.float32)
    b.set_outputs({"y": b.where(x > 0, x, m)})
    xs, ms = _floats((128, 256), np.float32), _floats((128, 1), np.float32)
    k = _check(b.graph, {"x": xs, "m": ms}, np.where(xs > 0, xs, ms))
    sels = [op for op in k.nki.walk() if isinstance(op, SelectOp)]
    assert len(sels) == 1 and sels[0].access("on_false").free_size == 1


def test_where_mixed_int32_into_float_copies_on_true():
    b = nk.Builder("where_mix")
    x = b.add_input("x", (128, 64), nk.int32)
    y = b.add_input("y", (128, 64), nk.float32)
    b.set_outputs({"y": b.where(y > 0, x, y)})
    xs = RNG.integers(-(2**24), 2**24, size=(128, 64)).astype(np.int32)
    ys = _floats((128, 64), np.float32)
    _check(b.graph, {"x": xs, "y": ys}, np.where(ys > 0, xs.astype(np.float32), ys))


def test_floor_through_documented_selects_keeps_specials():
    """floor keeps inf / NaN / huge values through its select (the sign of a zero result is not
    kept: floor's rounding-cast algorithm gives +0.0 for -0.0, stated in docs/lowering.md)."""
    b = nk.Builder("floor")
    x = b.add_input("x", (128, 64), nk.float32)
    b.set_outputs({"y": b.floor(x)})
    with np.errstate(over="ignore"):
        xs = _floats((128, 64), np.float32) * np.float32(1e3)
    want = np.floor(xs) + np.float32(0.0)  # -0.0 -> +0.0
    _check(b.graph, {"x": xs}, want)
