"""fp32 topk with k > 8 on the native path (transforms/lower/topk_wide.py): the main keys
(NaN and +inf as +inf, -inf as -FLT_MAX) and the codes' selection that places NaN, +inf,
-FLT_MAX and -inf exactly. Against an independent float64 reference (NaN first by index, then
descending values, ties to the lower index) on the NKI interpreter (Kernel.run) and the
simulator (nk.simulate); values are moved, never computed, so every comparison is exact (NaN
compared as NaN). Count bounds for the sampling-size shapes."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.target import TRN2
from nkigen_lite.transforms.lower.topk import fold_factor

FMAX = float(np.finfo(np.float32).max)


def _expected(x, k):
    """Per row: NaN first (ascending index), then descending value, ties by ascending index."""
    xf = np.asarray(x, np.float64)
    idx = np.empty(xf.shape[:-1] + (k,), np.int64)
    for r, row in enumerate(xf.reshape(-1, xf.shape[-1])):
        nan = np.isnan(row)
        order = np.lexsort((np.arange(row.size), -np.where(nan, 0.0, row), ~nan))
        idx.reshape(-1, k)[r] = order[:k]
    return np.take_along_axis(xf, idx, axis=-1), idx


def _check(got, x, k):
    v, i = got
    want_v, want_i = _expected(x, k)
    assert i.dtype == np.int32 and v.dtype == np.float32
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_array_equal(np.asarray(v, np.float64), want_v)  # NaN == NaN here


def _native(kern) -> bool:
    return any(op.name == "nki.match_replace8" for op in kern.nki.walk())


def _adversarial(rows: int, n: int, seed: int) -> np.ndarray:
    """Few distinct values (ties everywhere) with specials sprinkled, then one adversarial row
    each: -inf with two -FLT_MAX, all NaN, +inf / NaN interleaved, all equal, fewer finite
    values than k, -FLT_MAX and -inf only, +inf and -inf only."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 3, (rows, n)).astype(np.float32)
    m = rng.random((rows, n)) < 0.03
    x[m] = rng.choice(np.array([np.nan, np.inf, -np.inf, FMAX, -FMAX], np.float32), m.sum())
    special = [
        lambda r: (r.fill(-np.inf), r.__setitem__([5, n - 1], -FMAX)),
        lambda r: r.fill(np.nan),
        lambda r: (r.fill(np.inf), r.__setitem__(slice(1, None, 3), np.nan)),
        lambda r: r.fill(2.5),
        lambda r: (r.fill(-np.inf), r.__setitem__([3, n // 2], [1.0, -FMAX]), r.__setitem__(7, np.nan)),
        lambda r: (r.fill(-FMAX), r.__setitem__(slice(0, None, 2), -np.inf)),
        lambda r: (r.fill(-np.inf), r.__setitem__(slice(n - 20, None, 2), np.inf)),
    ]
    for r, f in zip(x, special):
        f(r)
    return x


@pytest.mark.parametrize(
    "shape,k,folded",
    [
        ((8, 300), 12, True),  # each row on q partitions, candidates merged on one
        ((9, 40), 16, False),  # one row per partition, one chunk
        ((7, 40), 40, False),  # k = n: the whole order
    ],
)
def test_wide_k_is_exact_on_adversarial_rows(shape, k, folded):
    x = _adversarial(*shape, seed=sum(shape) + k)
    kern = nk.compile(lambda x: nk.topk(x, k), x)
    assert _native(kern)
    assert (fold_factor(shape[0], shape[1], k, nk.float32, TRN2) > 1) == folded
    _check(tuple(kern.run({"x": x}).values()), x, k)
    _check(tuple(nk.simulate(kern, {"x": x}).values()), x, k)


def test_several_chunks_per_row():
    """130 rows (a full block and a peeled 2) of 20,000: rows one per partition, two chunks."""
    x = _adversarial(130, 20000, seed=3)
    kern = nk.compile(lambda x: nk.topk(x, 9), x)
    assert _native(kern)
    _check(tuple(kern.run({"x": x}).values()), x, 9)


def test_smallest_k_takes_the_same_path():
    """largest=False is topk of -x: NaN still first, then ascending values, -inf before -FLT_MAX."""
    x = _adversarial(7, 64, seed=5)
    kern = nk.compile(lambda x: nk.topk(x, 10, largest=False), x)
    assert _native(kern)
    v, i = tuple(kern.run({"x": x}).values())
    want_v, want_i = _expected(-x, 10)
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_array_equal(np.asarray(v, np.float64), -want_v)


@pytest.mark.parametrize("shape,max_instructions", [((7, 65536), 2_000), ((4, 151936), 1_200)])
def test_sampling_shapes_read_the_input_once(shape, max_instructions):
    """k = 50 over fp32 rows: native, HBM traffic one read of x plus the outputs (the decomposed
    path moved 260x), every DMA byte (with the candidates' SBUF -> SBUF moves of the folded rows)
    within 1.25x of that, executed instructions bounded (43,408 / 60,753 before)."""
    x = np.zeros(shape, np.float32)
    kern = nk.compile(lambda x: nk.topk(x, 50), x)
    assert _native(kern)
    s = kern.stats()
    once = x.nbytes + shape[0] * 50 * 8
    assert s.hbm_bytes <= 1.01 * once
    # the merged indices are picked on k partitions (topk_merge.pick_spread), not by a one-hot of
    # k x 3,200 candidates on the row's partition: no elementwise op there reads more than a row
    one_partition = [
        op for op in kern.nki.walk() if op.name == "nki.tensor_tensor" and op.access("dst").dims[0].size == 1
    ]
    assert one_partition == [] or max(op.access("dst").free_size for op in one_partition) <= 50 * 50
    assert s.dma_bytes <= 1.25 * once
    assert s.instructions_dynamic <= max_instructions
