"""where(x > 0, x, a·x) → maximum(x, a·x) (transforms/canonical/leaky_relu.py).

Every form of the comparison and product is rewritten, the excluded multipliers are not, and
the compiled kernels (NKI interpreter) equal the float64 NumPy select bit for bit on f32 inputs
holding NaN, ±inf, ±0, subnormals and the extremes (the f32 product of two f32 values is exact
in f64, so rounding the f64 reference to f32 gives the one correctly rounded result; zeros are
compared with their signs, NaN by position); bf16 within one bf16 rounding (2^-8 relative)."""

from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T
from nkigen_lite.transforms import canonicalize

F32 = np.float32
TINY = np.finfo(F32).tiny
SUB = np.float32(1e-45)  # the smallest f32 subnormal
BIG = np.finfo(F32).max


def _specials(shape=(128, 64)) -> np.ndarray:
    """f32 values covering the special cases, then normal random values."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 10).astype(F32)
    sp = np.array(
        [
            np.nan,
            -np.nan,
            np.inf,
            -np.inf,
            0.0,
            -0.0,
            SUB,
            -SUB,
            TINY,
            -TINY,
            3 * SUB,
            -3 * SUB,
            BIG,
            -BIG,
            1.0,
            -1.0,
        ],
        dtype=F32,
    )
    x.flat[: sp.size] = sp
    return x


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, zeros with equal signs, NaN where NaN."""
    got, want = np.asarray(got, dtype=F32), np.asarray(want, dtype=F32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


FORMS = {
    "x > 0": lambda x, a: np.where(x > 0, x, a * x),
    "x >= 0": lambda x, a: np.where(x >= 0, x, x * a),
    "0 < x": lambda x, a: np.where(0 < x, x, a * x),
    "x < 0": lambda x, a: np.where(x < 0, a * x, x),
    "x <= 0": lambda x, a: np.where(x <= 0, x * a, x),
    "0 >= x": lambda x, a: np.where(0 >= x, a * x, x),
}


def _counts(fn, shape=(128, 64), dtype=nk.float32):
    g = nk.trace(fn).trace(nk.TensorType(shape, dtype))
    counts = canonicalize(g)
    return counts.get("WhereScaledToMax", 0), {type(op) for op in g.body}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("a", [0.01, 0.2, 3.0])
def test_every_form_is_rewritten(form, a):
    n, ops = _counts(lambda x: FORMS[form](x, a))
    assert n == 1
    assert T.WhereOp not in ops
    assert (T.MaximumOp if a < 1 else T.MinimumOp) in ops


@pytest.mark.parametrize("a", [0.0, -0.01, 1.0, float("inf"), float("nan"), 1e-50])
def test_excluded_multipliers_are_kept(a):
    n, ops = _counts(lambda x: np.where(x > 0, x, a * x))
    assert n == 0 and T.WhereOp in ops


def test_other_selects_are_kept():
    assert _counts(lambda x: np.where(x > 1, x, 0.5 * x))[0] == 0  # not a comparison with 0
    assert _counts(lambda x: np.where(x > 0, 0.5 * x, x))[0] == 0  # the branches swapped
    assert _counts(lambda x: np.where(x > 0, x, 0.5 * x + 0.0 * x))[0] == 0  # not a·x
    assert _counts(lambda x: np.where(x > 0, x, 2 * x), dtype=nk.int32)[0] == 0  # integers


@pytest.mark.parametrize("form", ["x > 0", "x <= 0"])
@pytest.mark.parametrize("a", [0.01, 3.0])
def test_f32_special_values_bit_exact(form, a):
    x = _specials()
    k = nk.compile(nk.trace(lambda x: FORMS[form](x, a)).trace(nk.TensorType(x.shape, nk.float32)))
    assert "tensor.where" not in k.ir("canonicalize")
    got = k(x)
    x64, a64 = x.astype(np.float64), float(F32(a))
    want = FORMS[form](x64, a64)  # NaN compares false in f64 as in f32
    with np.errstate(over="ignore"):  # 3 * f32 max rounds to inf in f32, as the kernel's product
        want = want.astype(F32)
    _same_bits(got, want)


def _without_rewrite(monkeypatch, fn, t) -> nk.Kernel:
    mod = importlib.import_module("nkigen_lite.transforms.canonicalize")
    kept = tuple(p for p in mod.PATTERNS if type(p).__name__ != "WhereScaledToMax")
    with monkeypatch.context() as m:
        m.setattr(mod, "PATTERNS", kept)
        k = nk.compile(nk.trace(fn).trace(t))
        assert "tensor.where" in k.ir("canonicalize")
        return k


def test_bf16_equals_the_select(monkeypatch):
    """bf16: bit for bit the kernel of the select itself, and within two bf16 roundings of
    float64 (the multiplier's and the product's: 2^-7 relative; 2^-133, the bf16 subnormal
    spacing, absolute)."""
    x = _specials().astype(ml_dtypes.bfloat16)
    fn = lambda x: np.where(x > 0, x, 0.01 * x)  # noqa: E731
    t = nk.TensorType(x.shape, nk.bfloat16)
    k = nk.compile(nk.trace(fn).trace(t))
    assert "tensor.where" not in k.ir("canonicalize")
    got = np.asarray(k(x))
    base = np.asarray(_without_rewrite(monkeypatch, fn, t)(x))
    _same_bits(got.astype(F32), base.astype(F32))
    got = got.astype(np.float64)
    x64 = x.astype(np.float64)
    want = np.where(x64 > 0, x64, 0.01 * x64)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=2**-7, atol=2.0**-133)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


def test_big_kernel_has_no_select():
    """2048x4096 f32: one ScalarE product and one maximum per row tile, no predicate."""
    k = nk.compile(
        nk.trace(lambda x: np.where(x > 0, x, 0.01 * x)).trace(nk.TensorType((2048, 4096), nk.float32))
    )
    text = k.ir("nki")
    assert "nki.select" not in text and "tensor_tensor" in text
    assert k.stats().instructions_dynamic == 64  # per tile: load, product, maximum, store
    assert k.estimate().ratio < 1.1
