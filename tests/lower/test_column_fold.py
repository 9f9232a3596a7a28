"""Row folding (lower/plan.fold_rows) leaves a group reading a per-row column alone when its rows
already hold >= 4 KiB per partition: the column stays a per-partition operand of one
tensor_scalar. Results on the NKI interpreter equal float64 NumPy rounded once to f32 (one f32
add or multiply of f32 values: exact in f64, so the rounded reference is the one correct
result)."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import TensorScalarOp, TensorTensorOp

F32 = nk.float32


def _kernel(fn, *shapes):
    return nk.compile(nk.trace(fn).trace(*[nk.TensorType(s, F32) for s in shapes]))


def _ops(k, cls):
    return [op for op in k.nki.walk() if isinstance(op, cls)]


def test_outer_sum_wide_rows_unfolded():
    k = _kernel(lambda c, r: c + r, (256, 1), (1, 1024))
    assert not any(op.attrs["op"] == "add" for op in _ops(k, TensorTensorOp))
    adds = [op for op in _ops(k, TensorScalarOp) if op.attrs["op0"] == "add"]
    assert adds and all(len(op.access("dst").dims) == 2 for op in adds)  # 128 rows x 1024, no fold
    rng = np.random.default_rng(1)
    c = rng.standard_normal((256, 1)).astype(np.float32)
    r = rng.standard_normal((1, 1024)).astype(np.float32)
    want = (c.astype(np.float64) + r.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(k(c, r)), want)


def test_column_times_wide_rows_unfolded():
    k = _kernel(lambda x, c: x * c, (256, 1024), (256, 1))
    muls = [op for op in _ops(k, TensorScalarOp) if op.attrs["op0"] == "multiply"]
    assert muls and not _ops(k, TensorTensorOp)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((256, 1024)).astype(np.float32)
    c = rng.standard_normal((256, 1)).astype(np.float32)
    want = (x.astype(np.float64) * c.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(k(x, c)), want)


def test_narrow_rows_still_fold():
    """256 B rows: folding 8 rows to a partition (2 KiB) still pays."""
    k = _kernel(lambda x, c: x * c, (1024, 64), (1024, 1))
    dsts = [op.access("dst") for op in _ops(k, (TensorScalarOp, TensorTensorOp))]
    assert dsts and all(len(d.dims) == 3 for d in dsts)  # (partitions, q rows, 64)
