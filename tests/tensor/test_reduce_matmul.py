"""tensor.reduce (every kind, axis form, keepdims, ddof, dtype) and tensor.matmul (1-D rules,
batch broadcasting, every dtype family) vs float64 NumPy, in both interpreter modes."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing import assert_close, tolerance_for

from .numpy_ref import data, f64, storage

MODES = ("faithful", "float64")
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
AXES = [None, 0, -1, (0, 2), (-1, -3), (), (1,), (0, 1, 2), [2, 0]]
REDUCE_DTYPES = [
    nk.float32,
    nk.float16,
    nk.bfloat16,
    nk.tfloat32,
    nk.float8_e4m3,
    nk.int8,
    nk.uint8,
    nk.int32,
    nk.uint32,
    nk.bool_,
]


def _np_axes(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _check(got, ref, out_dtype, mode, what, n):
    if out_dtype.is_float:
        dt = "float64" if mode == "float64" else out_dtype
        rtol, atol = tolerance_for(dt)
        assert_close(got, ref, dt, what=what, atol=atol * max(1, n))  # sums grow with n
    else:
        assert got.dtype == out_dtype.np_dtype, what
        np.testing.assert_array_equal(got, np.asarray(ref).astype(out_dtype.np_dtype), err_msg=what)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", sorted(NP_REDUCE))
def test_reduce_values(kind, mode):
    shape = (2, 3, 4)
    for d in REDUCE_DTYPES:
        lo, hi = (-2, 2) if kind == "prod" else (-3, 3)
        x = data(shape, d, seed=5, lo=lo, hi=hi)
        for axis in AXES:
            for keepdims in (False, True):
                b = nk.Builder("t")
                v = b.add_input("x", shape, d)
                out = b.reduce(v, axis, kind, keepdims)
                b.set_outputs({"y": out})
                got = nk.run(b.graph, {"x": x}, mode=mode)["y"]
                src = x if (not out.dtype.is_float and not d.is_float) else f64(x)
                ref = NP_REDUCE[kind](src, axis=_np_axes(axis), keepdims=keepdims)
                what = f"{kind}({d}{shape}, axis={axis}, keepdims={keepdims}) {mode}"
                assert got.shape == np.shape(ref) == out.shape, what
                _check(got, ref, out.dtype, mode, what, x.size)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["var", "std"])
def test_var_std_ddof(kind, mode):
    for d in (nk.float32, nk.bfloat16, nk.int16, nk.bool_):
        x = data((3, 5), d, seed=2)
        for ddof in (0, 1, 2):
            for axis in (None, 0, -1):
                b = nk.Builder("t")
                v = b.add_input("x", (3, 5), d)
                out = getattr(b, kind)(v, axis=axis, ddof=ddof)
                b.set_outputs({"y": out})
                got = nk.run(b.graph, {"x": x}, mode=mode)["y"]
                ref = getattr(np, kind)(f64(x), axis=axis, ddof=ddof)
                _check(got, ref, out.dtype, mode, f"{kind}({d}, ddof={ddof}, axis={axis})", 15)


@pytest.mark.parametrize("mode", MODES)
def test_reduce_of_rank_0_and_1(mode):
    for shape in [(), (1,), (6,)]:
        x = data(shape, nk.float32, seed=1)
        for kind in ("sum", "max", "mean", "any"):
            b = nk.Builder("t")
            v = b.add_input("x", shape, nk.float32)
            out = b.reduce(v, None, kind, keepdims=True)
            b.set_outputs({"y": out})
            got = nk.run(b.graph, {"x": x}, mode=mode)["y"]
            ref = NP_REDUCE[kind](f64(x), keepdims=True)
            _check(got, ref, out.dtype, mode, f"{kind}{shape}", x.size)


def test_sum_over_an_empty_axis_is_zero_and_max_is_an_error():
    b = nk.Builder("t")
    x = b.add_input("x", (0, 3), nk.float32)
    b.set_outputs({"s": b.sum(x, axis=0), "a": b.all(x, axis=0)})
    r = nk.run(b.graph, {"x": np.zeros((0, 3), np.float32)})
    np.testing.assert_array_equal(r["s"], np.zeros(3, np.float32))
    np.testing.assert_array_equal(r["a"], np.ones(3, bool))
    with pytest.raises(nk.BuildError, match="tensor.reduce: max of an empty axis"):
        b.max(x, axis=0)


def test_bf16_sum_of_8192_elements_accumulates_in_fp32_and_rounds_once():
    """A bf16 accumulator would stall (256 + 1 rounds back to 256); fp32 accumulation with
    one final rounding lands within half a bf16 ulp of the exact sum."""
    rng = np.random.default_rng(7)
    x = storage(rng.uniform(0.0, 1.0, 8192), nk.bfloat16)
    b = nk.Builder("t")
    v = b.add_input("x", x.shape, nk.bfloat16)
    b.set_outputs({"s": b.sum(v), "ones": b.sum(b.full((8192,), 1.0, nk.bfloat16)), "m": b.mean(v)})
    r = nk.run(b.graph, {"x": x})
    exact = f64(x).sum()
    ulp = 2.0 ** (np.floor(np.log2(exact)) - 7)
    assert r["s"].dtype == nk.bfloat16.np_dtype
    assert abs(f64(r["s"]) - exact) <= 0.5 * ulp * (1 + 1e-3)
    assert f64(r["ones"]) == 8192.0
    assert abs(f64(r["m"]) - exact / 8192) <= 2.0**-9  # half an ulp near 0.5
    f16 = nk.Builder("h")
    h = f16.add_input("x", (8192,), nk.float16)
    f16.set_outputs({"s": f16.sum(h)})
    assert nk.run(f16.graph, {"x": np.ones(8192, np.float16)})["s"] == 8192.0


MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (4, 3, 2)),
    ((3,), (2, 3, 4)),
    ((2, 3, 4), (4,)),
    ((1, 1), (1, 1)),
]
MATMUL_DTYPES = [
    (d, d)
    for d in (
        nk.float32,
        nk.float16,
        nk.bfloat16,
        nk.tfloat32,
        nk.float8_e4m3,
        nk.float8_e4m3fn,
        nk.float8_e5m2,
        nk.float8_e3m4,
        nk.int8,
        nk.int32,
        nk.uint8,
    )
] + [
    (nk.float16, nk.float32),
    (nk.bfloat16, nk.int8),
    (nk.int8, nk.uint8),
    (nk.uint32, nk.int32),
    (nk.bfloat16, nk.float16),
]


@pytest.mark.parametrize("mode", MODES)
def test_matmul_values_shapes_and_dtypes(mode):
    for ta, tb in MATMUL_DTYPES:
        for k, (sa, sb) in enumerate(MATMUL_SHAPES):
            lo, hi = (-1.5, 1.5) if ta.is_float or tb.is_float else (-100, 100)
            a, bb = data(sa, ta, k, lo, hi), data(sb, tb, k + 50, lo, hi)
            b = nk.Builder("t")
            va, vb = b.add_input("a", sa, ta), b.add_input("b", sb, tb)
            out = va @ vb
            b.set_outputs({"y": out})
            got = nk.run(b.graph, {"a": a, "b": bb}, mode=mode)["y"]
            what = f"{ta}{sa} @ {tb}{sb} {mode}"
            if out.dtype.is_float:
                ref = np.matmul(f64(a), f64(bb))
                dt = "float64" if mode == "float64" else out.dtype
                assert got.shape == ref.shape == out.shape, what
                assert_close(got, ref, dt, what=what, atol=tolerance_for(dt)[1] * 4)
            else:  # NumPy's own integer matmul, wrapping in the result dtype
                ref = np.matmul(a, bb).astype(out.dtype.np_dtype)
                assert got.dtype == ref.dtype and got.shape == ref.shape, what
                np.testing.assert_array_equal(got, ref, err_msg=what)


def test_matmul_operator_forms():
    b = nk.Builder("t")
    x = b.add_input("x", (2, 3), nk.float32)
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    y1, y2, y3 = x @ w, b.matmul(x, w), (w.T @ x.T)
    b.set_outputs({"y1": y1, "y2": y2, "y3": y3})
    xa = data((2, 3), nk.float32, 4)
    r = nk.run(b.graph, {"x": xa})
    for k in ("y1", "y2"):
        assert_close(r[k], f64(xa) @ f64(w), nk.float32)
    assert_close(r["y3"], f64(w).T @ f64(xa).T, nk.float32)
