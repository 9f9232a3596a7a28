"""argmax / argmin on one path (composites_index.py): ``np.argmax`` / ``np.argmin`` under
@nk.trace build tensor.argmax / tensor.argmin like ``b.argmax`` / ``b.argmin``; the native
top-8 path (topk_nan.py) keeps NumPy's NaN rule (the first NaN wins, whatever else the row
holds, +inf included). Every result is compared exactly with NumPy on float64 copies of the
inputs, through nk.run, Kernel.run (NKI interpreter) and nk.simulate."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, FindIndex8Op

RNG = np.random.default_rng(1213)


def _three_ways(fn, x):
    g = nk.trace(fn).trace(x)
    k = nk.compile(g)
    want = fn(x.astype(np.float64))
    outs = {
        "nk.run": nk.run(g, {"x": x})["y"],
        "Kernel.run": k.run({"x": x})["y"],
        "nk.simulate": nk.simulate(k, {"x": x})["y"],
    }
    for how, got in outs.items():
        assert got.shape == np.shape(want), how
        np.testing.assert_array_equal(got, want, err_msg=how)
    return g, k


def _native(k) -> bool:
    return any(isinstance(op, FindIndex8Op) for op in k.nki.walk())


def test_traced_argmax_and_argmin_build_the_ops():
    def f(x):
        return np.argmax(x, axis=-1) + np.argmin(x, axis=0)[0]

    g = nk.trace(f).trace(np.zeros((4, 9), np.float32))
    names = [op.name for op in g.body]
    assert "tensor.argmax" in names and "tensor.argmin" in names
    assert "tensor.iota" not in names  # no inline expansion at trace time


@pytest.mark.parametrize("axis", [None, 0, 1, -1, -2])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_axis_and_keepdims_as_numpy(axis, keepdims, kind):
    """Ties everywhere (few distinct values) and NaNs in some rows; the tensor interpreter and
    the compiled kernel (two-pass expansion at these sizes) against NumPy."""
    x = RNG.integers(-3, 4, (6, 12)).astype(np.float32)
    x[2, 5] = x[4, 0] = x[4, 7] = np.nan
    fn = np.argmax if kind == "max" else np.argmin

    def f(x):
        return fn(x, axis=axis, keepdims=keepdims)

    _three_ways(f, x)


@pytest.mark.parametrize(
    "shape",
    [(1, 151936), (3, 151936), (200, 3000), (4, 40000)],
    ids=["greedy-1-row", "greedy-3-rows", "row-chunks", "folded"],
)
def test_native_argmax_keeps_numpy_nan_and_ties(shape):
    """On the native top-8 path: rows with NaN after a +inf (NaN wins), with NaN only at the
    end, with ties at the maximum, and plain rows."""
    x = RNG.integers(-50, 50, shape).astype(np.float32)  # ties at the maximum
    rows, n = shape
    x[0, 3] = np.inf
    x[0, n - 2] = np.nan
    x[0, n - 1] = np.nan
    if rows > 2:
        x[2, n // 2] = np.nan
        x[1, 7] = x[1, n - 3] = 1000.0  # a tie across segments
    g, k = _three_ways(lambda x: np.argmax(x, axis=-1), x)
    assert _native(k), "expected the native top-8 path"


def test_native_argmax_reads_the_logits_once():
    """8 rows of 151,936 f32 logits: one load per row, one store of the indices; the NaN rule
    adds no HBM traffic."""
    x = np.zeros((8, 151936), np.float32)
    k = nk.compile(lambda x: np.argmax(x, axis=-1), x)
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    assert len(dmas) == 9
    assert k.stats().dma_bytes == x.nbytes + 8 * 4


def test_b_argmax_and_traced_argmax_compile_to_the_same_kernel():
    x = np.zeros((2, 4096), np.float32)
    b = nk.Builder("_lambda_")
    v = b.add_input("x", x.shape, nk.float32)
    b.set_outputs({"y": b.argmax(v, axis=1)})
    traced = nk.compile(lambda x: np.argmax(x, axis=1), x)
    built = nk.compile(b.graph)
    strip = lambda k: [op.name for op in k.nki.walk()]  # noqa: E731
    assert strip(traced) == strip(built)
