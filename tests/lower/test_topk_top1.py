"""topk(x, 1) with its values read, on the rows-at-once path (topk_rows.py): after the first row,
GpSimd halves each row (elementwise max of its two halves, topk_merge.halved) so max8 reads half
the elements, and the rows' candidates merge by merge_top1 (max, compare, select, min) instead
of _merge's rounds. Values and indices against NumPy's stable argsort of the negated float64
values, on the NKI interpreter and the simulator: values are moved, never computed, so every
comparison is exact; ties (within a half, across the halves, across partitions) go to the lower
index."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import Max8Op, TensorTensorOp

ROWS, N = 4, 40000


def _top1(rows, n, dtype):
    b = nk.Builder("top1")
    x = b.add_input("x", (rows, n), dtype)
    v, i = b.topk(x, 1, -1)
    b.set_outputs({"v": v, "i": i})
    return nk.compile(b.graph)


@pytest.mark.parametrize(("np_dt", "nk_dt"), [(np.float32, nk.float32), (ml_dtypes.bfloat16, nk.bfloat16)])
def test_values_and_first_index_as_numpy(np_dt, nk_dt):
    rng = np.random.default_rng(3)
    x = rng.integers(-60, 60, (ROWS, N)).astype(np.float64)
    x[rng.random(x.shape) < 0.1] = -np.inf
    x[0, [100, 20000, 39999]] = 500.0  # the max in both halves of a row and across partitions
    x[1, :] = -np.inf  # a row of -inf: index 0
    x[2, [5, 6]] = np.inf  # neighbours
    x = x.astype(np_dt)
    k = _top1(ROWS, N, nk_dt)
    xf = x.astype(np.float64)
    want_i = np.argsort(-xf, axis=-1, kind="stable")[:, :1]
    want_v = np.take_along_axis(xf, want_i, axis=-1)
    for got in (k.run({"x": x}), nk.simulate(k, {"x": x})):
        np.testing.assert_array_equal(got["i"], want_i)
        np.testing.assert_array_equal(np.asarray(got["v"], np.float64), want_v)


def test_vocab_rows_halved_on_gpsimd_and_one_max8_per_row():
    """4 x 151,936 f32 (compile only): rows 1..3 halved on GpSimd (3 tensor_tensor maxima), one
    max8 per row and none in the merge (merge_top1)."""
    k = _top1(4, 151936, nk.float32)
    ops = list(k.nki.walk())
    halves = [op for op in ops if isinstance(op, TensorTensorOp) and op.engine == "gpsimd"]
    assert len(halves) == 3 and all(op.attrs["op"] == "maximum" for op in halves)
    maxes = [op for op in ops if isinstance(op, Max8Op)]
    assert len(maxes) == 4
    assert sum(op.access("src").free_size for op in maxes) == 1187 + 3 * 594
