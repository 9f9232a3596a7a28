"""argmin on the native top-8 path in one pass (transforms/lower/argmin.py): the top-1 index
of the negated values, with NumPy's rules — the first NaN wins, ties go to the lower index,
-inf is the minimum. Every result is compared exactly with ``np.argmin`` of a float64 copy of
the input, through nk.run (tensor interpreter), Kernel.run (NKI interpreter) and nk.simulate
(the simulator)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.dtypes import bfloat16
from nkigen_lite.nki.ops import ActivationOp, DmaCopyOp, FindIndex8Op, TensorReduceOp

from .test_argmax_nan import _three_ways

RNG = np.random.default_rng(2026)


def _native(k) -> bool:
    return any(isinstance(op, FindIndex8Op) for op in k.nki.walk())


def _special_rows(x):
    """Row 0: -inf early, NaN at the end (the NaN wins); row 1: a tie of the minimum across
    segments; row 2: all NaN; row 3: all -inf; the rest: ties among few distinct values."""
    rows, n = x.shape
    x[0, 3] = -np.inf
    x[0, n - 2] = x[0, n - 1] = np.nan
    if rows > 1:
        x[1, 7] = x[1, n - 3] = -1000.0
    if rows > 2:
        x[2, :] = np.nan
    if rows > 3:
        x[3, :] = -np.inf
    return x


@pytest.mark.parametrize(
    "shape",
    [(1, 151936), (4, 151936), (200, 3000), (4, 40000), (5, 1000)],
    ids=["greedy-1-row", "greedy-4-rows", "row-chunks", "folded", "one-chunk"],
)
def test_native_argmin_keeps_numpy_nan_ties_and_inf(shape):
    x = _special_rows(RNG.integers(-50, 50, shape).astype(np.float32))
    _, k = _three_ways(lambda x: np.argmin(x, axis=-1), x)
    assert _native(k), "expected the native top-8 path"


@pytest.mark.parametrize("dtype", [bfloat16.np_dtype, np.float16, np.int16, np.uint8, np.int8])
def test_native_argmin_of_narrow_dtypes(dtype):
    """Negation in fp32 is exact for these: int8's -128 and uint8's 255 included."""
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    x = RNG.integers(-20, 20, (6, 4096)).astype(np.float32)
    if info is not None:
        x = RNG.integers(info.min, info.max + 1, (6, 4096))
        x[1, 100] = x[1, 4000] = info.min  # tie at the extreme
        x[2, :] = info.max
    else:
        x = _special_rows(x)
    x = x.astype(dtype)
    _, k = _three_ways(lambda x: np.argmin(x, axis=-1), x)
    assert _native(k)


@pytest.mark.parametrize("keepdims", [False, True])
def test_native_argmin_along_axis_0(keepdims):
    x = _special_rows(RNG.integers(-9, 9, (8, 512)).astype(np.float32)).T.copy()
    _, k = _three_ways(lambda x: np.argmin(x, axis=0, keepdims=keepdims), x)
    assert _native(k)


@pytest.mark.parametrize("rows", [1, 8])
def test_argmin_reads_the_logits_once(rows):
    """One load per row of the input and one store of the indices, no full-row reduction (the
    expansion read the input twice: 2x the bytes, a tensor_reduce per pass), and the row
    negated once on ScalarE."""
    x = np.zeros((rows, 151936), np.float32)
    k = nk.compile(lambda x: np.argmin(x, axis=-1), x)
    ops = list(k.nki.walk())
    assert sum(isinstance(op, DmaCopyOp) for op in ops) == rows + 1
    assert k.stats().dma_bytes == x.nbytes + rows * 4
    assert not any(isinstance(op, TensorReduceOp) and op.access("data").free_size > 1024 for op in ops)
    negs = [op for op in ops if isinstance(op, ActivationOp) and op.attrs["scale"] == -1.0]
    assert len(negs) == 3 * rows  # per row, one per PSUM-bank piece of its 1,187-element segment
    assert sum(op.access("data").free_size for op in negs) == rows * 151936 // 128


def test_argmin_costs_what_argmax_costs():
    """The negation is the scale of the ScalarE copy argmax makes too (into PSUM, beside GpSimd's
    NaN mask): argmin's instructions are argmax's, its scheduled time within 2% of argmax's."""
    x = np.zeros((1, 151936), np.float32)
    kmin = nk.compile(lambda x: np.argmin(x, axis=-1), x)
    kmax = nk.compile(lambda x: np.argmax(x, axis=-1), x)
    assert kmin.stats().instructions_dynamic == kmax.stats().instructions_dynamic
    assert kmin.estimate().scheduled_ns <= 1.02 * kmax.estimate().scheduled_ns


def test_refused_argmin_still_expands():
    """The top-8 path does not take int32 (values beyond 2**24 are not exact in fp32): the
    two-pass expansion, still NumPy's answer (values within 2**20 here)."""
    x = RNG.integers(-(2**20), 2**20, (3, 300)).astype(np.int32)
    x[1, 5] = x[1, 200] = -(2**20) - 1
    _, k = _three_ways(lambda x: np.argmin(x, axis=-1), x)
    assert not _native(k)
