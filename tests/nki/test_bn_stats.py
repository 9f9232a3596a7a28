"""The batch-norm statistics instructions (nki.bn_stats, nki.bn_aggr) on the NKI interpreter and,
emitted as NKI source, on the NumPy simulator, against float64 NumPy written out here: per chunk
of at most 512 elements the count, mean and sum of squared deviations of the even and of the odd
elements; over the row the mean and population variance. Their cost rules follow the facts
sheet (bn_stats N cycles, bn_aggr 13·N/3, both at least MIN_II = 64).

Tolerances: the engines compute in fp32. Means and variances of N(3, 2) data accumulated in
fp32 over at most 512 (bn_stats) or a few dozen (bn_aggr) terms: rtol 2e-5 (about 340 ulp of
fp32; the worst-case bound of a 512-term fp32 sum is 512 · 2^-24 ≈ 3e-5 relative, a pairwise
or two-pass sum stays far below it). A bf16 result (bn_aggr dst) adds its own rounding: rtol
2^-8. Counts are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import emit_nki_source
from nkigen_lite.nki.ops import BnAggrOp, BnStatsOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.nki_sim.errors import NkiSimError
from nkigen_lite.perf.instruction_cost import instruction_cost

P = 128
FMAX = 512


def _chunks(f: int) -> list[tuple[int, int]]:
    """Chunks of at most 512 columns, as even as possible (so none has fewer than 2)."""
    n = -(-f // FMAX)
    base, extra = divmod(f, n)
    out, start = [], 0
    for k in range(n):
        size = base + (1 if k < extra else 0)
        out.append((start, size))
        start += size
    return out


def _kernel(f: int, dtype=nk.float32, out_dtype=nk.float32):
    """x (P, f) -> stats (P, 6 * chunks) from one bn_stats per chunk, mv (P, 2) from bn_aggr."""
    chunks = _chunks(f)
    b = nk.nki.Builder("bn")
    x = b.add_input("x", (P, f), dtype)
    st_out = b.alloc((P, 6 * len(chunks)), nk.float32, "hbm", name="stats")
    mv_out = b.alloc((P, 2), out_dtype, "hbm", name="mv")
    t = b.alloc((P, f), dtype, "sbuf")
    b.dma_copy(dst=t, src=x)
    st = b.alloc((P, 6 * len(chunks)), nk.float32, "sbuf")
    mv = b.alloc((P, 2), out_dtype, "sbuf")
    for k, (start, size) in enumerate(chunks):
        data = t[:, start : start + size]
        b.bn_stats(dst=st[:, 6 * k : 6 * k + 6], data=data)
    b.bn_aggr(dst=mv, data=st)
    b.dma_copy(dst=st_out, src=st)
    b.dma_copy(dst=mv_out, src=mv)
    for tile in (t, st, mv):
        b.dealloc(tile)
    b.set_outputs({"stats": st_out, "mv": mv_out})
    return b.graph


def _reference(x: np.ndarray):
    x = np.asarray(x, np.float64)
    cols = []
    for start, size in _chunks(x.shape[1]):
        c = x[:, start : start + size]
        for half in (c[:, 0::2], c[:, 1::2]):
            m = half.mean(axis=1)
            cols += [
                np.full(x.shape[0], half.shape[1], np.float64),
                m,
                ((half - m[:, None]) ** 2).sum(axis=1),
            ]
    return np.stack(cols, axis=1), np.stack([x.mean(axis=1), x.var(axis=1)], axis=1)


def _both(g, inputs):
    nk.nki.verify(g)
    return [("interpreter", nk.nki.run(g, inputs)), ("simulator", nk.simulate(emit_nki_source(g), inputs))]


@pytest.mark.parametrize("f", [2, 301, 512, 1000, 1024, 4096])
@pytest.mark.parametrize("dtype", [nk.float32, nk.bfloat16])
def test_stats_and_aggregate_against_float64(f, dtype):
    rng = np.random.default_rng(f)
    x = (3.0 + 2.0 * rng.standard_normal((P, f))).astype(dtype.np_dtype)
    want_st, want_mv = _reference(x)  # from the (rounded) inputs the kernel reads
    for where, got in _both(_kernel(f, dtype), {"x": x}):
        st = np.asarray(got["stats"], np.float64)
        counts = st.reshape(P, -1, 3)[:, :, 0]
        np.testing.assert_array_equal(counts, want_st.reshape(P, -1, 3)[:, :, 0], err_msg=where)
        np.testing.assert_allclose(st, want_st, rtol=2e-5, atol=1e-5, err_msg=where)
        np.testing.assert_allclose(got["mv"], want_mv, rtol=2e-5, atol=1e-6, err_msg=where)


def test_even_and_odd_halves_are_separate():
    """Even elements all 1, odd elements all 5: each half has zero spread, the row does not."""
    x = np.tile(np.array([1.0, 5.0], np.float32), (P, 64))
    for where, got in _both(_kernel(128), {"x": x}):
        np.testing.assert_array_equal(got["stats"][0], [64, 1, 0, 64, 5, 0], err_msg=where)
        np.testing.assert_array_equal(got["mv"][0], [3.0, 4.0], err_msg=where)


def test_bf16_result_of_the_aggregate():
    rng = np.random.default_rng(1)
    x = (3.0 + 2.0 * rng.standard_normal((P, 1024))).astype(np.float32)
    _, want_mv = _reference(x)
    for where, got in _both(_kernel(1024, out_dtype=nk.bfloat16), {"x": x}):
        assert got["mv"].dtype == nk.bfloat16.np_dtype
        np.testing.assert_allclose(np.asarray(got["mv"], np.float64), want_mv, rtol=2**-8, err_msg=where)


def test_a_large_mean_keeps_the_variance():
    """Rows of mean 1000 and spread 1: the mean-then-deviation form keeps the variance to fp32's
    relative accuracy of the deviations, where E[x²] − E[x]² would lose it (1e6 ± 2e3 in fp32)."""
    rng = np.random.default_rng(2)
    x = (1000.0 + rng.standard_normal((P, 1024))).astype(np.float32)
    _, want_mv = _reference(x)
    for where, got in _both(_kernel(1024), {"x": x}):
        np.testing.assert_allclose(got["mv"][:, 1], want_mv[:, 1], rtol=1e-3, err_msg=where)


def test_aggregating_a_zero_count_is_refused_by_both():
    b = nk.nki.Builder("bad_aggr")
    x = b.add_input("x", (P, 6), nk.float32)
    y = b.alloc((P, 2), nk.float32, "hbm", name="y")
    st = b.alloc((P, 6), nk.float32, "sbuf")
    mv = b.alloc((P, 2), nk.float32, "sbuf")
    b.dma_copy(dst=st, src=x)
    b.bn_aggr(dst=mv, data=st)
    b.dma_copy(dst=y, src=mv)
    b.dealloc(st)
    b.dealloc(mv)
    b.set_outputs({"y": y})
    g = b.graph
    bad = np.zeros((P, 6), np.float32)
    with pytest.raises(nk.InterpretError, match="has count 0.0; bn_aggr reads bn_stats outputs"):
        nk.nki.run(g, {"x": bad})
    with pytest.raises(NkiSimError, match="count that is not a positive integer"):
        nk.simulate(emit_nki_source(g), {"x": bad})
    good = np.tile(np.array([2, 1.0, 0.5, 2, 3.0, 0.5], np.float32), (P, 1))  # {1±½, 3±½}
    for where, got in _both(g, {"x": good}):
        np.testing.assert_allclose(got["y"][0], [2.0, 1.25], rtol=1e-7, err_msg=where)


def test_emitted_calls_name_the_documented_keywords():
    src = emit_nki_source(_kernel(1024))
    assert "nisa.bn_stats(dst=" in src and ", data=" in src
    assert "nisa.bn_aggr(dst=" in src


def _op(g, cls):
    return next(op for op in g.walk() if isinstance(op, cls))


@pytest.mark.parametrize(
    ("f", "stats_cycles", "aggr_cycles"), [(512, 512, 64), (4096, 512, 13 * 48 / 3), (40, 64, 64)]
)
def test_cost_rules_follow_the_facts_sheet(f, stats_cycles, aggr_cycles):
    g = _kernel(f)
    st = instruction_cost(_op(g, BnStatsOp), TRN2)
    ag = instruction_cost(_op(g, BnAggrOp), TRN2)
    assert (st.engine, ag.engine) == ("vector", "vector")
    assert st.cycles == pytest.approx(stats_cycles)
    assert ag.cycles == pytest.approx(aggr_cycles)
    assert st.ns == pytest.approx(stats_cycles / 0.96)
