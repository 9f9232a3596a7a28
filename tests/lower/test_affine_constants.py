"""Affine int32 constants built on chip (lower/affine_constants.py) by one GpSimd ``iota`` per
tile (lower/affine_iota.py) instead of read from HBM as extra kernel inputs: a gather's row
offsets (``iota * cols``) and constants written as ``np.arange`` expressions. Results are ints
moved or computed exactly, so they must equal NumPy (computed here, int64 then cast) bit for bit
three ways (nk.run, the NKI interpreter, the simulator); counts are read off the NKI IR."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ops as N
from nkigen_lite.transforms.lower.affine_constants import affine_form


def _ops(k, cls):
    return [op for op in k.nki.walk() if type(op) is cls]


def _three_ways(g, ins, want):
    k = nk.compile(g)
    for what, got in (
        ("nk.run", nk.run(g, ins)),
        ("Kernel.run", k.run(ins)),
        ("simulator", nk.simulate(k, ins)),
    ):
        y = got[k.output_names[0]]
        assert y.dtype == want.dtype, what
        np.testing.assert_array_equal(y, want, err_msg=what)
    return k


def test_affine_form_recognises_exact_affine_tables_only():
    rows, cols = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    assert affine_form((3 + 4 * rows - 2 * cols).astype(np.int32)) == (3, (4, -2))
    assert affine_form(np.arange(128, dtype=np.int32).reshape(128, 1) * 4096) == (0, (4096, 0))
    assert affine_form(np.array([1, 5, 2], np.int32)) is None  # not affine
    assert affine_form((rows * cols).astype(np.int32)) is None  # not affine (a product)
    # every value fits int32 but c0 + Σ |a_d|·(n_d - 1) does not: the chain would wrap
    big = np.array([[2**30, 2**31 - 1], [-(2**31) + 1, 0]], np.int64)
    assert affine_form(big) is None


@pytest.mark.parametrize("mode", ["wrap", "clip"])
def test_take_axis_1_row_offsets_are_one_iota_not_an_input(mode):
    # the (128, 1) row offsets iota * 4096 of the flat gather: one iota with channel multiplier
    # 4096, no HBM constant input; negative and out-of-range ids as NumPy's mode defines them
    g = nk.trace(lambda x, i: np.take(x, i, axis=1, mode=mode)).trace(
        nk.TensorType((128, 4096), nk.float32), nk.TensorType((16,), nk.int32)
    )
    xv = np.random.default_rng(5).standard_normal((128, 4096)).astype(np.float32)
    iv = np.array([0, 4095, -1, -4096, 5000, -5000, 7, 8191, -8193, 2, 3, 4, 4097, 100, -100, 1], np.int32)
    k = _three_ways(g, {"x": xv, "i": iv}, np.take(xv, iv, axis=1, mode=mode))
    assert k.constants == {}
    assert not any(n.startswith("const") for n in k.input_names)
    iotas = _ops(k, N.IotaOp)
    assert [op.attrs["channel_multiplier"] for op in iotas] == [4096]


def test_take_along_axis_negative_ids_without_constant_input():
    g = nk.trace(lambda x, i: np.take_along_axis(x, i, -1)).trace(
        nk.TensorType((128, 300), nk.int32), nk.TensorType((128, 4), nk.int32)
    )
    rng = np.random.default_rng(6)
    xv = rng.integers(-(2**31), 2**31 - 1, (128, 300), dtype=np.int64).astype(np.int32)
    iv = rng.integers(-300, 300, (128, 4)).astype(np.int32)
    k = _three_ways(g, {"x": xv, "i": iv}, np.take_along_axis(xv, iv, -1))
    assert k.constants == {}
    assert len(_ops(k, N.IotaOp)) == 1


def _table_2d():
    r, c = np.meshgrid(np.arange(32), np.arange(16), indexing="ij")
    return (7 - 48 * r - 3 * c).astype(np.int32)


def _table_3d():
    a, b, c = np.meshgrid(np.arange(4), np.arange(8), np.arange(6), indexing="ij")
    return (100 * a + 10 * b + c - 50).astype(np.int32)


@pytest.mark.parametrize(
    ("table", "shape"),
    [
        (_table_2d, (32, 16)),
        (lambda: (np.arange(16) * 5 - 2).astype(np.int32), (32, 16)),
        (_table_3d, (4, 8, 6)),
    ],
    ids=["rows-cols", "cols", "3d"],
)
def test_arange_tables_are_one_iota(table, shape):
    t = table()
    g = nk.trace(lambda x: x - t).trace(nk.TensorType(shape, nk.int32))
    xv = np.random.default_rng(8).integers(-1000, 1000, shape).astype(np.int32)
    want = (xv.astype(np.int64) - t).astype(np.int32)
    k = _three_ways(g, {"x": xv}, want)
    assert k.constants == {}
    assert len(_ops(k, N.IotaOp)) == 1  # c0 + Σ a_d · index_d in one instruction, not 3+


def test_non_affine_and_gather_index_constants_stay_inputs():
    # an affine table returned as it is: copied from its input (building it would be a store too)
    g = nk.trace(lambda x: (x + 1, np.arange(8, dtype=np.int32) * 3)).trace(nk.TensorType((8,), nk.int32))
    k = nk.compile(g)
    assert list(k.constants) == ["const0"]
    got = k.run({"x": np.zeros(8, np.int32)})
    np.testing.assert_array_equal(got[k.output_names[1]], np.arange(8, dtype=np.int32) * 3)
