"""Greedy sampling (nkigen_lite/workloads/greedy.py): argmax over the 151,936 fp32 logits of the
Qwen3 vocabulary, full size, one row and four rows, on the tensor interpreter, the NKI
interpreter and the simulator; int32 indices equal to np.argmax exactly (ties to the lower
index). Traffic asserted as a byte count (one pass)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.workloads import get_workload

W = get_workload("greedy_sampling")
VOCAB = 151936


@pytest.fixture(scope="module", params=[1, 4], ids=["1row", "4rows"])
def kernel(request):
    g = W.graph(rows=request.param)
    return g, nk.compile(g)


def _all_ways(g, k, ins):
    return [nk.run(g, ins)["ids"], k.run(ins)["ids"], nk.simulate(k, ins)["ids"]]


def test_full_vocab_matches_np_argmax_three_ways(kernel):
    g, k = kernel
    ins = W.inputs(g, seed=5)
    want = np.argmax(ins["logits"], axis=-1)
    assert np.array_equal(want, W.reference(**ins)["ids"])
    for got in _all_ways(g, k, ins):
        assert got.dtype == np.int32 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_ties_go_to_the_lower_index(kernel):
    """Every row holds its maximum at two or more columns: the lowest wins. Rows: the maximum
    at the first and the last column; a constant row (index 0); the maximum in the last
    column only; a planted tie around a chunk boundary."""
    g, k = kernel
    rows = g.inputs[0].type.shape[0]
    x = np.random.default_rng(7).standard_normal((rows, VOCAB)).astype(np.float32)
    cases = [(0, VOCAB - 1), None, (VOCAB - 1,), (16383, 16384, 16385)]
    for r in range(rows):
        c = cases[r % len(cases)] if rows > 1 else (70001, 70002)
        if c is None:
            x[r] = 1.5
        else:
            x[r, list(c)] = 9.0
    want = np.argmax(x, axis=-1)
    for got in _all_ways(g, k, {"logits": x}):
        np.testing.assert_array_equal(got, want)


def test_traffic_reads_the_logits_once(kernel):
    """argmax runs as the native top-1 (max8 / find_index8 per chunk): one pass over the
    logits; beyond the minimum (logits in, ids out) only a few bytes of index per row move
    (measured: 12 B per row)."""
    g, k = kernel
    rows = g.inputs[0].type.shape[0]
    s = k.stats()
    assert s.min_hbm_bytes == rows * VOCAB * 4 + rows * 4
    assert s.min_hbm_bytes <= s.hbm_bytes <= s.min_hbm_bytes + 16 * rows, (s.hbm_bytes, s.min_hbm_bytes)
