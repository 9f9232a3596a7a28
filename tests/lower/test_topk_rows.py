"""topk of a few long rows with every row at once (transforms/lower/topk_rows.py): all loads
issued before any top-8 pass (one per row), candidates
moved onto their row's partition by TensorE transposes (no SBUF -> SBUF DMA), the values stored
only when something reads them. Results against NumPy's stable argsort of the negated values
(float64) on the NKI interpreter and the simulator: values are moved, never computed, so every
comparison is exact; ties (inside a piece, across pieces and across partitions) go to the lower
index."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, FindIndex8Op, Max8Op, SelectOp, TransposeOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.transforms.lower.topk import fold_factor
from nkigen_lite.transforms.lower.topk_rows import fits

VOCAB = 151936


def _argmax(rows, dtype=nk.float32):
    b = nk.Builder("greedy")
    x = b.add_input("x", (rows, VOCAB), dtype)
    b.set_outputs({"y": b.argmax(x, axis=-1)})
    return nk.compile(b.graph)


def _topk(shape, dtype, k):
    b = nk.Builder("topk")
    x = b.add_input("x", shape, dtype)
    v, i = b.topk(x, k, -1)
    b.set_outputs({"v": v, "i": i})
    return nk.compile(b.graph)


def _expected(x, k):
    xf = np.asarray(x, np.float64)
    idx = np.argsort(-xf, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(xf, idx, axis=-1), idx


def _dmas(kern):
    return [op for op in kern.nki.walk() if isinstance(op, DmaCopyOp)]


@pytest.mark.parametrize("rows", [1, 8])
def test_greedy_loads_every_row_first_and_moves_candidates_by_transposes(rows):
    """Per row one load of 1,187 logits per partition, one store of the indices (the values
    argmax drops are not stored), no SBUF -> SBUF DMA; every load is issued before the first
    find_index8; 3 transposes (values, indices, NaN candidates: topk_nan.py) for all rows. Each
    row's maximum comes from its NaN-free select (select_reduce's max, in PSUM-bank pieces) and
    the merge of the candidates needs none either (merge_top1): no max8 at all."""
    kern = _argmax(rows)
    assert fold_factor(rows, VOCAB, 1, nk.float32, TRN2) == 128
    dmas = _dmas(kern)
    assert len(dmas) == rows + 1
    assert all(op.access("src").space.value == "hbm" or op.access("dst").space.value == "hbm" for op in dmas)
    body = list(kern.nki.body)
    first_find = next(i for i, op in enumerate(body) if isinstance(op, FindIndex8Op))
    loads = [
        i for i, op in enumerate(body) if isinstance(op, DmaCopyOp) and op.access("src").space.value == "hbm"
    ]
    assert len(loads) == rows and max(loads) < first_find
    assert sum(isinstance(op, TransposeOp) for op in kern.nki.walk()) == 3
    assert not any(isinstance(op, Max8Op) for op in kern.nki.walk())  # merge_top1: max, ==, select, min
    reducing = [
        op for op in kern.nki.walk() if isinstance(op, SelectOp) and op.access("reduce_res") is not None
    ]
    # per row 3 pieces of one PSUM bank (512 + 512 + 163 of 1,187), each select reading its
    # values from PSUM (one input stream per memory) where ScalarE copied them
    assert len(reducing) == 3 * rows
    assert all(op.access("on_true").space.value == "psum" for op in reducing)
    assert sum(op.access("on_true").free_size for op in reducing) == rows * VOCAB // 128


@pytest.mark.parametrize("rows", [1, 3, 8])
def test_greedy_ties_go_to_the_lower_index_on_both_interpreters(rows):
    """Row r: maxima at neighbouring columns of one partition's segment, across two partitions,
    a constant row, and random rows with few distinct values."""
    kern = _argmax(rows)
    rng = np.random.default_rng(rows)
    x = rng.integers(-4, 4, (rows, VOCAB)).astype(np.float32)
    seg = VOCAB // 128
    plants = [(5 * seg + 594, 5 * seg + 593), (9 * seg + 3, 2 * seg + 1000), None]
    for r in range(rows):
        p = plants[r % 3]
        if p is None:
            x[r] = 2.5
        else:
            x[r, list(p)] = 50.0
    want = np.argmax(x, axis=-1)
    for got in (kern.run({"x": x}), nk.simulate(kern, {"x": x})):
        assert got["y"].dtype == np.int32
        np.testing.assert_array_equal(got["y"], want)


@pytest.mark.parametrize(
    ("shape", "dtype", "k"),
    [((3, 40000), nk.bfloat16, 5), ((2, 65536), nk.float32, 8), ((6, 12800), nk.float16, 3)],
)
def test_topk_values_and_indices_match_stable_argsort(shape, dtype, k):
    rows, n = shape
    q = fold_factor(rows, n, k, dtype, TRN2)
    assert q > 1 and fits(rows, q, n // q, k, dtype, TRN2)
    kern = _topk(shape, dtype, k)
    rng = np.random.default_rng(k)
    x = rng.integers(-6, 6, shape).astype(np.float64)
    x[rng.random(shape) < 0.2] = -np.inf
    x = x.astype(dtype.np_dtype)
    want_v, want_i = _expected(x, k)
    assert len(_dmas(kern)) == rows + 2  # the values are stored too
    for got in (kern.run({"x": x}), nk.simulate(kern, {"x": x})):
        np.testing.assert_array_equal(got["i"], want_i)
        np.testing.assert_array_equal(np.asarray(got["v"], np.float64), want_v)


def test_k_above_8_keeps_the_row_by_row_path():
    rows, n, k = 4, 40000, 9
    q = fold_factor(rows, n, k, nk.bfloat16, TRN2)
    assert q > 1 and not fits(rows, q, n // q, k, nk.bfloat16, TRN2)
