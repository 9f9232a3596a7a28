"""Gathers of a (K, M) id grid by one indirect DMA per id column (lower/indexed_columns.py) and
the traced-index arithmetic kept in one instruction per op: take_along_axis and np.take agree
bit for bit with NumPy written here (the ops move values: no tolerance) three ways (nk.run,
the NKI interpreter, the simulator), with negative indices wrapped as NumPy does; an index out
of range fails in both interpreters; at model size the instruction and DMA counts are bounded
(compile only)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ops as N

DTYPES = [(nk.float32, np.float32), (nk.bfloat16, ml_dtypes.bfloat16), (nk.int32, np.int32)]
_ids = {"ids": lambda d: d[0].name}


def _ops(k, cls):
    return [op for op in k.nki.walk() if type(op) is cls]


def _three_ways(g, ins, want):
    k = nk.compile(g)
    for what, got in (
        ("nk.run", nk.run(g, ins)),
        ("Kernel.run", k.run(ins)),
        ("simulator", nk.simulate(k, ins)),
    ):
        assert got["y"].dtype == want.dtype, what
        np.testing.assert_array_equal(got["y"], want, err_msg=what)
    return k


def _take_along(rows, cols, m):
    return nk.trace(lambda x, i: np.take_along_axis(x, i, 1)).trace(
        nk.TensorType((rows, cols), nk.float32), nk.TensorType((rows, m), nk.int32)
    )


@pytest.mark.parametrize("dt", DTYPES, **_ids)
def test_take_along_axis_by_id_columns_matches_numpy(dt):
    rows, cols, m = 64, 33, 5  # 5 gathers of 64 rows (fewer DMAs than 3 chunks of 128 ids)
    g = nk.trace(lambda x, i: np.take_along_axis(x, i, 1)).trace(
        nk.TensorType((rows, cols), dt[0]), nk.TensorType((rows, m), nk.int32)
    )
    rng = np.random.default_rng(7)
    xv = (rng.standard_normal((rows, cols)) * 8).astype(dt[1])
    iv = rng.integers(-cols, cols, (rows, m)).astype(np.int32)
    iv[0, :2] = (-cols, cols - 1)  # both ends of the range
    k = _three_ways(g, {"x": xv, "i": iv}, np.take_along_axis(xv, iv, 1))
    assert len(_ops(k, N.DmaGatherOp)) == m and not any(isinstance(op, N.ForiLoopOp) for op in k.nki.walk())


@pytest.mark.parametrize("bad", [33, -34, 2**31 - 1, -(2**31)])
def test_take_along_axis_out_of_range_index_fails_in_both_interpreters(bad):
    k = nk.compile(_take_along(64, 33, 5))
    iv = np.zeros((64, 5), np.int32)
    iv[3, 2] = bad
    ins = {"x": np.zeros((64, 33), np.float32), "i": iv}
    user = rf"tensor\.take_along_axis: index {bad} is out of bounds for axis 1 with size 33 .*i\[3, 2\]"
    with pytest.raises(nk.IndexOutOfRange, match=user):  # the kernel's inputs are checked first
        k.run(ins)
    with pytest.raises(nk.IndexOutOfRange, match=user):
        nk.simulate(k, ins)
    # the kernel itself, run without that check, still stops at its DMA's bounds check
    with pytest.raises(nk.InterpretError, match=r"out of range \[0, 2112\)"):
        nk.nki.run(k.nki, {**ins, **k.constants})
    with pytest.raises(nk.InterpretError, match="out of bounds for the 2112 rows"):
        nk.simulate(k.nki_source(), ins)


def test_take_with_negative_traced_ids_matches_numpy():
    g = nk.trace(lambda t, i: np.take(t, i, axis=0)).trace(
        nk.TensorType((50, 24), nk.float32), nk.TensorType((40,), nk.int32)
    )
    tv = np.random.default_rng(1).standard_normal((50, 24)).astype(np.float32)
    iv = np.random.default_rng(2).integers(-50, 50, 40).astype(np.int32)
    iv[:2] = (-50, 49)
    _three_ways(g, {"t": tv, "i": iv}, tv[iv])
    with pytest.raises(nk.InterpretError, match="out of"):
        nk.compile(g).run({"t": tv, "i": np.full(40, -51, np.int32)})


def test_take_along_axis_topk_gather_counts():
    k = nk.compile(_take_along(128, 4096, 8))  # the top-k logits gather: compile only
    assert len(_ops(k, N.DmaGatherOp)) == 8  # one per id column, no loop of 128-id chunks
    dmas = [op for op in k.nki.walk() if isinstance(op, N.DmaCopyOp)]
    assert len(dmas) <= 12  # ids in, 8 gathers, the output stored (no index scratch round trip)
    assert k.estimate().instructions <= 40  # index adds in one instruction each, not 16-bit limbs
    assert k.stats().hbm_traffic_ratio == 1.0
    # the index and the 1,024 elements taken and written: the (128, 1) column of row offsets is
    # one on-chip iota, not a constant input (it added 128 * 4 bytes before affine_constants.py)
    assert k.constants == {}
    assert k.stats().hbm_bytes == 3 * 128 * 8 * 4


def test_embedding_ids_need_no_relayout():
    g = nk.trace(lambda t, i: np.take(t, i, axis=0)).trace(
        nk.TensorType((151936, 2048), nk.bfloat16), nk.TensorType((128,), nk.int32)
    )
    k = nk.compile(g)  # compile only
    dmas = [op for op in k.nki.walk() if isinstance(op, N.DmaCopyOp)]
    assert len(dmas) == 3  # the ids as one column, the gather, the store: no SBUF -> SBUF copy
    assert k.estimate().instructions <= 14


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_take_of_few_columns_matches_numpy(mode):
    # 3 ids of a 100-long last axis: the ids repeated for each of the 6 rows, 18 element offsets
    g = nk.trace(lambda x, i: np.take(x, i, axis=1, mode=mode)).trace(
        nk.TensorType((6, 100), nk.float32), nk.TensorType((3,), nk.int32)
    )
    xv = np.random.default_rng(3).standard_normal((6, 100)).astype(np.float32)
    iv = np.array([-100, 99, 5] if mode == "raise" else [-250, 170, 5], np.int32)
    k = _three_ways(g, {"x": xv, "i": iv}, np.take(xv, iv, axis=1, mode=mode))
    assert sum(op.moved.size for op in _ops(k, N.DmaGatherOp)) == 18  # the elements taken, no more


@pytest.mark.parametrize("bad", [100, -101])
def test_take_of_few_columns_out_of_range_fails(bad):
    g = nk.trace(lambda x, i: x[:, i]).trace(
        nk.TensorType((6, 100), nk.float32), nk.TensorType((3,), nk.int32)
    )
    with pytest.raises(nk.IndexOutOfRange, match=f"index {bad} is out of bounds for axis 1 with size 100"):
        nk.compile(g).run({"x": np.zeros((6, 100), np.float32), "i": np.array([0, bad, 1], np.int32)})


def test_take_axis_1_traced_ids_counts():
    g = nk.trace(lambda x, i: np.take(x, i, axis=1)).trace(
        nk.TensorType((128, 4096), nk.float32), nk.TensorType((64,), nk.int32)
    )
    k = nk.compile(g)  # compile only
    assert len(_ops(k, N.DmaGatherOp)) == 64  # one element of every row per id
    # x is never transposed through HBM: only the 64 columns, the ids and their row offsets move
    assert k.stats().hbm_traffic_ratio < 2.0


def test_ids_read_by_another_op_keep_its_layout():
    # the ids also summed: the sum keeps them along the free dim (one partition), the gather
    # reads them relaid; asking them for the partitions would make the int32 sum cross them
    g = nk.trace(lambda t, i: (t[i], i.sum())).trace(
        nk.TensorType((300, 40), nk.float32), nk.TensorType((100,), nk.int32)
    )
    tv = np.random.default_rng(5).standard_normal((300, 40)).astype(np.float32)
    iv = np.random.default_rng(6).integers(-300, 300, 100).astype(np.int32)
    k = nk.compile(g)
    for got in (k.run({"t": tv, "i": iv}), nk.simulate(k, {"t": tv, "i": iv})):
        np.testing.assert_array_equal(got["y0"], tv[iv])
        assert int(got["y1"]) == int(iv.astype(np.int64).sum())
    assert k.estimate().instructions <= 46
