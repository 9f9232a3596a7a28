"""Values of every elementwise unary and binary op vs NumPy, every dtype, both interpreter modes.

References are the op classes' float64 NumPy functions on the stored input values (faithful mode: the dtype's
tolerance from nkigen_lite.testing; float64 mode: the oracle tolerance 1e-9), or NumPy's own
integer semantics on the native arrays (exact). Where NumPy has a float32 ufunc, faithful
results must also equal NumPy computed in float32 and rounded once to the result dtype.
"""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T
from nkigen_lite.testing import assert_close

from .numpy_ref import data, f64, storage

SHAPES = [(), (1,), (7,), (2, 1, 3)]
MODES = ("faithful", "float64")

# References come from the op classes (their ``reference``, anchored to independent values by
# tests/tensor/test_op_facts.py); NumPy's own ufuncs where the class traces from one.
REF_UNARY = {short: cls.reference for short, cls in T.UNARY_OPS.items()}
# NumPy ufuncs with their own float32 loops: faithful results equal them, rounded once
F32_UFUNC = {short: cls.traced_from[0] for short, cls in T.UNARY_OPS.items() if cls.traced_from}
# integer semantics of the ops that keep integer dtypes (NumPy's own ufuncs)
INT_UNARY = {short: cls.reference for short, cls in T.UNARY_OPS.items() if not cls.float_only}


def _unary_input(name, shape, d, seed):
    if name in ("log", "sqrt", "rsqrt"):
        return data(shape, d, seed, lo=0.1, hi=3.0)
    x = data(shape, d, seed)
    if name == "reciprocal" and d.is_float:
        x = np.where(np.abs(f64(x)) < 0.25, storage(0.5, d), x)
    return x


def _run1(build, arrays, mode):
    b = nk.Builder("t")
    xs = [b.add_input(f"x{i}", a.shape, d) for i, (a, d) in enumerate(arrays)]
    out = build(b, *xs)
    b.set_outputs({"y": out})
    got = nk.run(b.graph, {f"x{i}": a for i, (a, _) in enumerate(arrays)}, mode=mode)["y"]
    return out, got


def _check_float(got, ref, out_dtype, mode, what):
    if mode == "float64":
        assert got.dtype == np.float64, what
        assert_close(got, ref, "float64", what=what)
    else:
        assert got.dtype == out_dtype.np_dtype, what
        assert_close(got, ref, out_dtype, what=what)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REF_UNARY))
def test_unary_values(name, mode):
    checked = 0
    for d in nk.ALL_DTYPES:
        for k, shape in enumerate(SHAPES):
            x = _unary_input(name, shape, d, seed=k)
            try:
                out, got = _run1(lambda b, v: b.unary(name, v), [(x, d)], mode)
            except nk.BuildError:
                continue  # which dtypes an op accepts is tested in test_dtype_rules
            what = f"{name}({d}{shape}) {mode}"
            assert got.shape == shape, what
            if out.dtype.is_float:
                with np.errstate(all="ignore"):
                    ref = REF_UNARY[name](f64(x))
                _check_float(got, ref, out.dtype, mode, what)
                if mode == "faithful" and name in F32_UFUNC:
                    with np.errstate(all="ignore"):
                        once = storage(F32_UFUNC[name](f64(x).astype(np.float32)), out.dtype)
                    np.testing.assert_array_equal(got, once, err_msg=what)
            else:
                with np.errstate(all="ignore"):
                    ref = INT_UNARY[name](x) if d.is_int or d.is_bool else REF_UNARY[name](f64(x))
                assert got.dtype == out.dtype.np_dtype, what
                np.testing.assert_array_equal(got, np.asarray(ref).astype(out.dtype.np_dtype), err_msg=what)
            checked += 1
    assert checked >= 4 * len(SHAPES)


REF_BINARY = {short: cls.reference for short, cls in T.BINARY_OPS.items()}
PAIRS = [(d, d) for d in nk.ALL_DTYPES] + [
    (nk.float16, nk.float32),
    (nk.bfloat16, nk.float16),
    (nk.bfloat16, nk.int8),
    (nk.float8_e4m3, nk.bfloat16),
    (nk.int8, nk.uint8),
    (nk.uint32, nk.int32),
    (nk.int16, nk.float16),
    (nk.bool_, nk.float32),
    (nk.tfloat32, nk.bfloat16),
    (nk.float8_e5m2, nk.float8_e4m3fn),
    (nk.uint32, nk.float32),
    (nk.int32, nk.float32),
    (nk.uint8, nk.bool_),
    (nk.float8_e3m4, nk.int8),
]
BSHAPES = [((), (3,)), ((4, 1), (3,)), ((2, 3), (2, 3)), ((1,), ()), ((2, 1, 4), (3, 1))]


def _binary_inputs(name, a_t, b_t, sa, sb, seed):
    if name in ("floor_divide", "mod"):  # multiples of 1/8: no rounding-boundary flips
        grid = np.random.default_rng(seed)
        a = storage(grid.integers(-24, 25, sa) / 8, a_t) if a_t.is_float else data(sa, a_t, seed)
        b = (
            storage(grid.integers(1, 17, sb) / 8 * grid.choice([-1, 1], sb), b_t)
            if b_t.is_float
            else data(sb, b_t, seed + 1)
        )
    elif name == "pow":
        a = data(sa, a_t, seed, lo=0.5 if a_t.is_float else 0, hi=2.0 if a_t.is_float else 4)
        b = data(sb, b_t, seed + 1, lo=-2.0 if b_t.is_float else 0, hi=2.0 if b_t.is_float else 3)
    else:
        a, b = data(sa, a_t, seed), data(sb, b_t, seed + 1)
    if name in ("div", "floor_divide", "mod"):  # no zero denominators (tested separately)
        if b_t.is_float:
            b = np.where(np.abs(f64(b)) < 0.25, storage(0.5, b_t), b)
        elif b_t.is_int:
            b = np.where(b == 0, np.ones_like(b), b)
        else:
            b = np.ones_like(b)
    return a, b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REF_BINARY))
def test_binary_values(name, mode):
    checked = 0
    for i, (a_t, b_t) in enumerate(PAIRS):
        for k, (sa, sb) in enumerate(BSHAPES):
            a, b = _binary_inputs(name, a_t, b_t, sa, sb, seed=10 * i + k)
            try:
                out, got = _run1(lambda bb, x, y: bb.binary(name, x, y), [(a, a_t), (b, b_t)], mode)
            except nk.BuildError:
                continue  # which dtypes an op accepts is tested in test_dtype_rules
            what = f"{name}({a_t}{sa}, {b_t}{sb}) {mode}"
            assert got.shape == np.broadcast_shapes(sa, sb), what
            native = a.dtype.kind in "biu" and b.dtype.kind in "biu"
            with np.errstate(all="ignore"):
                ref = REF_BINARY[name](a, b) if native else REF_BINARY[name](f64(a), f64(b))
            if out.dtype.is_float:
                _check_float(got, ref, out.dtype, mode, what)
            else:
                assert got.dtype == out.dtype.np_dtype, what
                np.testing.assert_array_equal(got, np.asarray(ref).astype(out.dtype.np_dtype), err_msg=what)
            checked += 1
    assert checked >= 2 * len(BSHAPES)


@pytest.mark.parametrize("mode", MODES)
def test_division_by_zero_follows_numpy(mode):
    b = nk.Builder("t")
    x = b.add_input("x", (4,), nk.float32)
    y = b.add_input("y", (4,), nk.float32)
    i = b.add_input("i", (3,), nk.int32)
    j = b.add_input("j", (3,), nk.int32)
    b.set_outputs({"div": x / y, "fdiv": i // j, "imod": i % j, "idiv": i / j})
    xa = np.array([1.0, -1.0, 0.0, 2.0], np.float32)
    ya = np.zeros(4, np.float32)
    ia, ja = np.array([7, -7, 0], np.int32), np.zeros(3, np.int32)
    r = nk.run(b.graph, {"x": xa, "y": ya, "i": ia, "j": ja}, mode=mode)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(r["div"], (xa / ya).astype(r["div"].dtype))
        np.testing.assert_array_equal(r["fdiv"], ia // ja)
        np.testing.assert_array_equal(r["imod"], ia % ja)
        np.testing.assert_array_equal(r["idiv"], (ia / ja).astype(r["idiv"].dtype))


def test_integer_power_with_negative_exponent_is_an_interpret_error():
    b = nk.Builder("t")
    x = b.add_input("x", (2,), nk.int32)
    y = b.add_input("y", (2,), nk.int32)
    b.set_outputs({"y": x**y})
    with pytest.raises(nk.InterpretError, match="tensor.pow"):
        nk.run(b.graph, {"x": np.array([2, 3], np.int32), "y": np.array([1, -1], np.int32)})


def test_faithful_mode_rounds_every_op_and_float64_mode_does_not():
    """(x + y) - x in bf16: the sum is rounded before the subtraction in faithful mode."""
    b = nk.Builder("t")
    x = b.add_input("x", (1,), nk.bfloat16)
    y = b.add_input("y", (1,), nk.bfloat16)
    b.set_outputs({"y": (x + y) - x})
    xa = storage([256.0], nk.bfloat16)
    ya = storage([1.0], nk.bfloat16)
    faithful = nk.run(b.graph, {"x": xa, "y": ya})["y"]
    assert faithful.dtype == nk.bfloat16.np_dtype and f64(faithful)[0] == 0.0  # 257 -> 256
    oracle = nk.run(b.graph, {"x": xa, "y": ya}, mode="float64")["y"]
    assert oracle.dtype == np.float64 and oracle[0] == 1.0


def test_integer_comparisons_across_signedness_are_exact():
    """u32 vs i32 compare, max and floor_divide as NumPy does (computed in int64)."""
    b = nk.Builder("t")
    u = b.add_input("u", (3,), nk.uint32)
    i = b.add_input("i", (3,), nk.int32)
    b.set_outputs(
        {"gt": u > i, "mx": b.maximum(u, i), "fd": u // b.maximum(i, 1), "eq": u == -1, "lt": u < 2**32 - 1}
    )
    ua = np.array([4_000_000_000, 5, 0], np.uint32)
    ia = np.array([0, 7, -3], np.int32)
    r = nk.run(b.graph, {"u": ua, "i": ia})
    np.testing.assert_array_equal(r["gt"], ua > ia)
    np.testing.assert_array_equal(r["mx"], np.maximum(ua, ia).astype(np.int32))
    np.testing.assert_array_equal(r["fd"], (ua // np.maximum(ia, 1)).astype(np.int32))
    np.testing.assert_array_equal(r["eq"], ua == -1)
    np.testing.assert_array_equal(r["lt"], ua < 2**32 - 1)
