"""Result dtypes of every op family against NumPy (64-bit narrowed) and the bf16/fp8/tf32 rule.

Expected dtypes come from NumPy itself (the ufunc applied to sample arrays, then narrowed)
or, for dtypes NumPy lacks, from the independent containment lattice in numpy_ref.py.
"""

import warnings

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T

from .numpy_ref import NATIVE, expected_promotion, narrow

ALL = nk.ALL_DTYPES
NP_BINARY = {short: cls.ufunc for short, cls in T.BINARY_OPS.items()}
NP_UNARY = {short: cls.traced_from[0] for short, cls in T.UNARY_OPS.items() if cls.traced_from}
# ops NumPy lacks: the project treats them like np.exp (float-valued transcendental) ...
FLOAT_VALUED = tuple(short for short, cls in T.UNARY_OPS.items() if cls.float_only and not cls.traced_from)
# ... and relu keeps its operand's dtype


def _numpy_result(fn, *dtypes):
    """narrow(NumPy's result dtype), or None when NumPy rejects the dtypes."""
    args = [np.ones((2,), d.np_dtype) for d in dtypes]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return narrow(np.asarray(fn(*args)).dtype)
    except TypeError:
        return None


def _expected_binary(name, a, b):
    cat = T.BINARY_OPS[name].category
    if a in NATIVE and b in NATIVE:
        return _numpy_result(NP_BINARY[name], a, b)
    if cat in ("compare", "logical"):
        return nk.bool_
    if cat == "bitwise":
        return None  # a bf16/fp8/tf32 operand is a float: NumPy rejects bitwise ops on floats
    return expected_promotion(a, b)


def _build(fn, *dtypes, shapes=None):
    b = nk.Builder("t")
    shapes = shapes or [(2,)] * len(dtypes)
    xs = [b.add_input(f"x{i}", s, d) for i, (s, d) in enumerate(zip(shapes, dtypes))]
    return b, fn(b, *xs)


@pytest.mark.parametrize("name", sorted(NP_BINARY))
def test_binary_dtype_for_every_pair(name):
    for a in ALL:
        for b in ALL:
            want = _expected_binary(name, a, b)
            if want is None:
                with pytest.raises(nk.BuildError, match=f"tensor.{name}"):
                    _build(lambda bb, x, y: bb.binary(name, x, y), a, b)
                continue
            _, v = _build(lambda bb, x, y: bb.binary(name, x, y), a, b, shapes=[(3, 1), (4,)])
            assert (v.dtype, v.shape) == (want, (3, 4)), (name, a, b)


def test_documented_non_native_promotions():
    cases = [
        (nk.bfloat16, nk.float16, nk.float32),
        (nk.float8_e4m3, nk.bfloat16, nk.bfloat16),
        (nk.int8, nk.bfloat16, nk.bfloat16),
        (nk.int32, nk.bfloat16, nk.float32),
        (nk.float8_e5m2, nk.float8_e4m3fn, nk.bfloat16),
        (nk.int8, nk.float8_e5m2, nk.bfloat16),
        (nk.float16, nk.float8_e5m2, nk.float16),
        (nk.tfloat32, nk.bfloat16, nk.tfloat32),
        (nk.tfloat32, nk.float32, nk.float32),
        (nk.bool_, nk.float8_e3m4, nk.float8_e3m4),
        (nk.uint16, nk.tfloat32, nk.float32),
    ]
    for a, b, want in cases:
        for x, y in ((a, b), (b, a)):
            _, v = _build(lambda bb, p, q: p + q, x, y)
            assert v.dtype is want, (x, y, v.dtype)


@pytest.mark.parametrize("name", sorted(NP_UNARY) + list(FLOAT_VALUED) + ["relu"])
def test_unary_dtype_for_every_dtype(name):
    for d in ALL:
        if name == "relu":
            want = d
        elif d in NATIVE:
            want = _numpy_result(NP_UNARY.get(name, np.exp), d)
        else:  # bf16/fp8/tf32 behave like NumPy's float32: same float, bool, or rejected
            f32 = _numpy_result(NP_UNARY.get(name, np.exp), nk.float32)
            want = None if f32 is None else (d if f32 is nk.float32 else f32)
        if want is None:
            with pytest.raises(nk.BuildError, match=f"tensor.{name}"):
                _build(lambda bb, x: bb.unary(name, x), d)
            continue
        _, v = _build(lambda bb, x: bb.unary(name, x), d)
        assert v.dtype is want, (name, d, v.dtype)


NP_REDUCE = {
    "sum": np.sum,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "mean": np.mean,
    "var": np.var,
    "std": np.std,
    "any": np.any,
    "all": np.all,
}


@pytest.mark.parametrize("kind", sorted(NP_REDUCE))
def test_reduce_dtype_for_every_dtype(kind):
    for d in ALL:
        if kind in ("any", "all"):
            want = nk.bool_
        elif d in NATIVE:
            want = _numpy_result(lambda x: NP_REDUCE[kind](x, axis=0), d)
        else:
            want = d
        _, v = _build(lambda bb, x: bb.reduce(x, 0, kind), d)
        assert v.dtype is want, (kind, d)


def test_matmul_where_concat_dtypes_for_every_pair():
    for a in ALL:
        for b in ALL:
            native = a in NATIVE and b in NATIVE
            if a.is_bool or b.is_bool:
                with pytest.raises(nk.BuildError, match="tensor.matmul: bool"):
                    _build(lambda bb, x, y: x @ y, a, b, shapes=[(2, 3), (3, 4)])
            else:
                want = (
                    _numpy_result(lambda x, y: np.matmul(x.reshape(1, 2), y.reshape(2, 1)), a, b)
                    if native
                    else expected_promotion(a, b)
                )
                _, v = _build(lambda bb, x, y: x @ y, a, b, shapes=[(2, 3), (3, 4)])
                assert (v.dtype, v.shape) == (want, (2, 4)), (a, b)
            want = (
                _numpy_result(lambda x, y: np.where(x > 0, x, y), a, b)
                if native
                else expected_promotion(a, b)
            )
            _, v = _build(lambda bb, c, x, y: bb.where(c, x, y), nk.bool_, a, b, shapes=[(2, 1), (3,), ()])
            assert (v.dtype, v.shape) == (want, (2, 3)), ("where", a, b)
            want = (
                _numpy_result(lambda x, y: np.concatenate([x, y]), a, b)
                if native
                else expected_promotion(a, b)
            )
            _, v = _build(lambda bb, x, y: bb.concat([x, y], -1), a, b, shapes=[(2, 3), (2, 5)])
            assert (v.dtype, v.shape) == (want, (2, 8)), ("concat", a, b)


SCALARS = [True, False, 0, 2, -3, 127, 128, 255, 256, -129, 1000, 70000, 2**31, 1.5, -0.5, 1e10]


@pytest.mark.parametrize("d", ALL, ids=str)
def test_weak_python_scalars_follow_nep50(d):
    """Python scalars are weak: NumPy 2's result (narrowed), or its OverflowError."""
    for s in SCALARS:
        for reflected in (False, True):
            b = nk.Builder("t")
            x = b.add_input("x", (2,), d)
            if d in NATIVE:
                arr = np.ones((2,), d.np_dtype)
                try:
                    with np.errstate(all="ignore"):
                        want = narrow((s + arr if reflected else arr + s).dtype)
                except OverflowError:
                    want = None
                if d is nk.bool_ and isinstance(s, int) and not isinstance(s, bool) and s >= 2**31:
                    want = None  # NumPy: int64, narrowed to int32, which cannot hold s
            else:
                want = d  # every non-native dtype is a float: all Python scalars keep it
            if want is None:
                with pytest.raises(nk.BuildError, match=rf"tensor.add: .*{s}.* out of (bounds|range)"):
                    s + x if reflected else x + s
                continue
            v = s + x if reflected else x + s
            assert v.dtype is want, (d, s, reflected)


def test_brief_examples_of_weak_and_strong_scalars():
    b = nk.Builder("t")
    bf = b.add_input("bf", (2,), nk.bfloat16)
    i8 = b.add_input("i8", (2,), nk.int8)
    i32 = b.add_input("i32", (2,), nk.int32)
    f16 = b.add_input("f16", (2,), nk.float16)
    assert (bf + 2.0).dtype is nk.bfloat16
    assert (2.0 * bf).dtype is nk.bfloat16
    with pytest.raises(nk.BuildError, match="tensor.add: Python integer 1000 is out of bounds for int8"):
        i8 + 1000
    assert (i32 + 1.5).dtype is nk.float32
    assert (i8 + 1.5).dtype is nk.float32  # NumPy: float64, narrowed
    # NumPy scalars and arrays are strong
    assert (bf + np.float64(2.0)).dtype is nk.float32  # f64 narrowed to f32 wins over bf16
    assert (f16 + np.float32(1)).dtype is nk.float32
    assert (np.float32(1) + f16).dtype is nk.float32
    assert (i8 + np.int64(5)).dtype is nk.int32  # int64 narrowed
    assert (i8 + np.int16(5)).dtype is nk.int16
    assert (f16 * np.ones(2, np.float16)).dtype is nk.float16
    assert (np.ones(2, np.int8) - i8).dtype is nk.int8
    with pytest.raises(nk.BuildError, match="does not fit in int32"):
        i8 + np.array([2**40])


def test_narrowing_of_64_bit_results():
    b = nk.Builder("t")
    i32 = b.add_input("i32", (2,), nk.int32)
    u32 = b.add_input("u32", (2,), nk.uint32)
    f32 = b.add_input("f32", (2,), nk.float32)
    assert (i32 + u32).dtype is nk.int32  # NumPy int64
    assert (i32 / i32).dtype is nk.float32  # NumPy float64
    assert (i32 + f32).dtype is nk.float32  # NumPy float64
    assert b.sum(u32).dtype is nk.uint32  # NumPy uint64
    assert b.mean(i32).dtype is nk.float32  # NumPy float64
    assert b.full((2,), 3).dtype is nk.int32  # NumPy int64
    assert b.constant(np.arange(3)).dtype is nk.int32
    assert b.constant(np.linspace(0, 1, 3)).dtype is nk.float32


def test_input_dtypes_outside_trn2_are_rejected():
    b = nk.Builder("t")
    for bad, msg in [
        (np.float64, "float64 is not supported on trn2"),
        ("int64", "int64 is not supported on trn2"),
        (np.complex64, "complex64 is not supported"),
        ("float128x", "unknown dtype"),
        (object, "not supported"),
    ]:
        with pytest.raises(nk.BuildError, match=msg):
            b.add_input("x", (2,), bad)


def test_dtype_names_resolve():
    for d in ALL:
        assert nk.get_dtype(d.name) is d and nk.get_dtype(d.numpy_name) is d
        if d is not nk.tfloat32:
            assert nk.get_dtype(d.np_dtype) is d
    assert nk.get_dtype(np.float32) is nk.float32 and nk.get_dtype("bool") is nk.bool_
