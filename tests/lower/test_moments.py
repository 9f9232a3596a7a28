"""Row mean and variance from bn_stats / bn_aggr (transforms/lower/moments.py): LayerNorm and
traced np.var / np.std compute their statistics in one VectorE pass over the row, and the results
match float64 NumPy on the NKI interpreter and on the simulator.

Tolerances (fp32 data of N(3, 2)): the engines compute in fp32; a normalised output is within
1e-5 absolute of the float64 reference (|y| ≲ 5, the fp32 statistics carry a relative error of a
few 1e-7 over 1,024-element rows); variances and standard deviations within rtol 1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ComputeOp
from nkigen_lite.workloads import get_workload

LN = get_workload("layernorm")


def _names(k) -> list[str]:
    return [op.name for op in k.nki.walk()]


def _stat_passes(k, row: int) -> float:
    """Passes over the row made to compute row statistics: tensor_reduce, activations with a
    fused row sum, bn_stats (each its data's elements per partition over the row length)."""
    n = 0.0
    for op in k.nki.walk():
        if not isinstance(op, ComputeOp):
            continue
        stats = op.name in ("nki.tensor_reduce", "nki.bn_stats") or (
            op.name == "nki.activation" and op.attrs["reduce_res"] is not None
        )
        if stats:
            n += op.access("data").free_size / row
    return n


def _row_passes(k, row: int) -> float:
    """Passes over the row of every compute instruction touching at least a quarter row."""
    n = 0.0
    for op in k.nki.walk():
        if isinstance(op, ComputeOp):
            f = max(op.access(a).free_size for a, _ in op.access_attrs())
            if f >= row // 4:
                n += f / row
    return n


def _inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = (3.0 + 2.0 * rng.standard_normal(shape)).astype(np.float32)
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    return {"x": x, "w": w, "b": b}


@pytest.mark.parametrize("shape", [(512, 1024), (256, 1000), (100, 300), (2048, 1024), (1, 128, 1024)])
def test_layernorm_against_float64_on_interpreter_and_simulator(shape):
    k = nk.compile(LN.graph(shape=shape))
    ins = _inputs(shape)
    want = LN.reference(**ins)["y"]
    for where, got in (("interpreter", k.run(ins)["y"]), ("simulator", nk.simulate(k, ins)["y"])):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5, err_msg=where)
    assert "nki.bn_aggr" in _names(k)


def test_layernorm_statistics_take_one_vector_pass_per_row_tile():
    """512 x 1024 f32, 4 row tiles: per tile one pass of bn_stats (two 512-element chunks) and one
    bn_aggr; no tensor_reduce, no squaring activation (before: a row sum on VectorE and a square
    with a fused sum on ScalarE, 2 passes per tile; 5 row passes per tile in all, now 4)."""
    k = nk.compile(LN.graph(shape=(512, 1024)))
    names = _names(k)
    tiles = 4
    assert names.count("nki.bn_stats") == 2 * tiles
    assert names.count("nki.bn_aggr") == tiles
    assert "nki.tensor_reduce" not in names
    assert not any(op.name == "nki.activation" and op.attrs["op"] == "square" for op in k.nki.walk())
    assert _stat_passes(k, 1024) == 1.0 * tiles
    # 4 passes per tile (statistics, normalise, * w, + b) and the kernel's broadcasts of w and b
    assert _row_passes(k, 1024) <= 4 * tiles + 4


@pytest.mark.parametrize("ddof", [0, 1])
def test_traced_var_and_std(ddof):
    rng = np.random.default_rng(3)
    x = (3.0 + 2.0 * rng.standard_normal((256, 768))).astype(np.float32)

    def fn(x):
        return np.var(x, axis=-1, ddof=ddof), np.std(x, axis=-1, ddof=ddof)

    k = nk.compile(fn, x)
    x64 = x.astype(np.float64)
    want = [np.var(x64, axis=-1, ddof=ddof), np.std(x64, axis=-1, ddof=ddof)]
    outs = list(k.run({"x": x}).values())
    sims = list(nk.simulate(k, {"x": x}).values())
    for got in (outs, sims):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g).reshape(w.shape), w, rtol=1e-5)
    names = _names(k)  # the 2 row tiles as straight code (stage_pipeline: two stores a tile)
    assert names.count("nki.bn_stats") == 2 * 2 and names.count("nki.bn_aggr") == 2  # var, std share
    assert _stat_passes(k, 768) == 2.0  # per tile 1; the two-pass form: a row sum and a square-sum
    assert _row_passes(k, 768) == 2.0  # x - mean, read only by the folded square, is not computed


def test_var_of_a_wide_row_is_one_vector_pass():
    """np.var(x, -1) of 2048 x 4096 f32 (compile only): per row tile 8 bn_stats of 512 columns and
    one bn_aggr, nothing else over the row (before: also a dead x - mean pass, VectorE-bound at
    1.75x the roofline; now DMA-bound)."""
    k = nk.compile(lambda x: np.var(x, axis=-1), np.zeros((2048, 4096), np.float32))
    names = _names(k)
    assert names.count("nki.bn_stats") == 8 and names.count("nki.bn_aggr") == 1
    assert _stat_passes(k, 4096) == 1.0
    assert {op.name for op in k.nki.walk() if isinstance(op, ComputeOp)} == {"nki.bn_stats", "nki.bn_aggr"}
    assert k.estimate().critical_engine == "dma"


def test_a_sum_of_squares_without_the_mean_is_not_rewritten():
    """rmsnorm's mean(x*x) has no centring: it keeps its fused ScalarE square-and-sum."""
    k = nk.compile(get_workload("rmsnorm").graph(shape=(256, 1024)))
    assert "nki.bn_stats" not in _names(k)


@pytest.mark.parametrize("dtype", ["int16", "int8", "uint8"])
def test_var_of_small_integers(dtype):
    """A widening cast of a 16/8-bit integer row to f32 is elided (fold.py: its tile is read as
    is); bn_stats takes float data only, so the row is copied to f32 first. Integer values below
    2**16 are exact in fp32: rtol 1e-5 as for float data."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    x = rng.integers(info.min, int(info.max) + 1, size=(256, 300)).astype(dtype)

    def fn(x):
        return np.var(x, axis=-1), np.std(x, axis=-1)

    k = nk.compile(fn, x)
    x64 = x.astype(np.float64)
    want = [np.var(x64, axis=-1), np.std(x64, axis=-1)]
    for got in (list(k.run({"x": x}).values()), list(nk.simulate(k, {"x": x}).values())):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g).reshape(w.shape), w, rtol=1e-5)
    assert "nki.bn_stats" in _names(k)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: np.var(x * x, axis=-1),
        lambda x: np.std(np.exp(x * 0.25), axis=-1, ddof=1),
        lambda x: (np.exp(x * 0.25).mean(-1), np.exp(x * 0.25).var(-1)),
    ],
    ids=["var_of_square", "std_of_exp", "mean_and_var_of_exp"],
)
def test_var_of_an_activation_result(fn):
    """The row sum of the mean reads an activation's result (x*x is a ScalarE square): bn_stats
    computes it, so it is not also fused into the activation (before: "lowering bug: no tile
    for %mul"). rtol 1e-5 (fp32 statistics of 300-element rows)."""
    x = _inputs((130, 300), seed=4)["x"] * 0.5
    k = nk.compile(fn, x)
    want = fn(x.astype(np.float64))
    want = want if isinstance(want, tuple) else (want,)
    for got in (list(k.run({"x": x}).values()), list(nk.simulate(k, {"x": x}).values())):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g).reshape(w.shape), w, rtol=1e-5)
    assert "nki.bn_stats" in _names(k)


@pytest.mark.parametrize(
    "shape, dtype, fn",
    [
        ((4, 64), np.float32, lambda x: (x.mean(-1), x.var(-1))),
        ((2, 7), "bf16", lambda x: (x.mean(-1), x.var(-1))),  # the mean read through a cast
        ((3, 1000), np.float32, lambda x: (x - x.mean(-1, keepdims=True), x.std(-1))),
        ((256, 64), np.float32, lambda x: (x.mean(-1, keepdims=True), x.var(-1))),  # pipelined rows
    ],
)
def test_returned_mean_of_a_row_holding_an_infinity(shape, dtype, fn):
    """A row with an infinity in its even half and finite values in its odd half: NumPy's mean
    is the infinity, but bn_aggr's mean (sequential pairwise update on the simulator: inf +
    (m - inf) / 2) was NaN, returned as x.mean(-1) (fuzzed: tests/property/test_lowering_fuzz.py).
    A returned mean is now the row's sum of x / n (ScalarE, beside bn_stats); variances are NaN
    either way. Compared with float64 NumPy, NaN and infinities exactly, on both interpreters."""
    import ml_dtypes

    dt = ml_dtypes.bfloat16 if dtype == "bf16" else dtype
    x = np.random.default_rng(0).standard_normal(shape).astype(dt)
    x[0, 4], x[-1, 2] = -np.inf, np.inf
    k = nk.compile(fn, x)
    with np.errstate(invalid="ignore"):
        want = fn(x.astype(np.float64))
    tol = 2e-2 if dtype == "bf16" else 1e-5
    for how, out in (("interpreter", k.run({"x": x})), ("simulator", nk.simulate(k, {"x": x}))):
        for name, ref in zip(k.output_names, want):
            got = np.asarray(out[name]).astype(np.float64)
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, equal_nan=True, err_msg=f"{how} {name}")
