"""The indexed ops compiled: the emitted module on the simulator, Kernel.run (NKI interpreter)
and nk.run agree bit for bit with NumPy written here (the ops move values: no tolerance), in
f32, bf16 and int32, across the 128-id chunks (1, 127, 128, 129, 300 ids), with rows wider than
one data tile, duplicate scatter ids and runtime start indices. A bad index is an error in both
the NKI interpreter and the simulator; DMA bytes show that only the selected rows move."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ops as N
from nkigen_lite.transforms.lower.indexed import ROW_CHUNK_BYTES

DTYPES = [(nk.float32, np.float32), (nk.bfloat16, ml_dtypes.bfloat16), (nk.int32, np.int32)]
_ids = {"ids": lambda d: d[0].name}


def _data(shape, npd, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 8).astype(npd)


def _all_three(graph, ins, want: dict):
    k = nk.compile(graph)
    for what, got in (
        ("nk.run", nk.run(graph, ins)),
        ("Kernel.run", k.run(ins)),
        ("simulator", nk.simulate(k, ins)),
    ):
        for name, w in want.items():
            assert got[name].dtype == w.dtype, (what, name)
            np.testing.assert_array_equal(got[name], w, err_msg=f"{what} {name}")
    return k


def _ops(k, cls):
    return [op for op in k.nki.walk() if type(op) is cls]


@pytest.mark.parametrize("dt", DTYPES, **_ids)
@pytest.mark.parametrize("n_ids", [1, 127, 128, 129, 300])
def test_gather_rows_across_id_chunks(dt, n_ids):
    b = nk.Builder("g")
    t = b.add_input("t", (257, 24), dt[0])
    i = b.add_input("i", (n_ids,), nk.int32)
    b.set_outputs({"y": b.gather_rows(t, i)})
    tv = _data((257, 24), dt[1], n_ids)
    iv = np.random.default_rng(n_ids).integers(0, 257, n_ids).astype(np.int32)
    iv[0] = 256  # the last row
    k = _all_three(b.graph, {"t": tv, "i": iv}, {"y": np.stack([tv[j] for j in iv])})
    assert len(_ops(k, N.DmaGatherOp)) == (1 if n_ids <= 128 else 2)  # full chunks loop


def test_gather_rows_with_rows_wider_than_a_data_tile_and_2d_ids():
    row = ROW_CHUNK_BYTES // 4 * 2 + 100  # two full row chunks and a remainder
    b = nk.Builder("g")
    t = b.add_input("t", (20, row), nk.float32)
    i = b.add_input("i", (3, 5), nk.uint32)
    b.set_outputs({"y": b.gather_rows(t, i)})
    tv = _data((20, row), np.float32)
    iv = np.random.default_rng(2).integers(0, 20, (3, 5)).astype(np.uint32)
    k = _all_three(b.graph, {"t": tv, "i": iv}, {"y": tv[iv.reshape(-1)].reshape(3, 5, row)})
    assert len(_ops(k, N.DmaGatherOp)) == 2  # one in the row-chunk loop, one for the remainder


def test_gather_from_a_computed_table_with_computed_ids():
    b = nk.Builder("g")
    x = b.add_input("x", (40, 8), nk.float32)
    j = b.add_input("j", (50,), nk.int32)
    ids = (j * 3 + 1) % 40  # ids computed on chip, stored, then used as the index column
    b.set_outputs({"y": b.gather_rows(b.exp(x), ids) + 1.0})
    xv = _data((40, 8), np.float32) / 8
    jv = np.arange(50, dtype=np.int32)
    k = nk.compile(b.graph)
    want = np.exp(xv.astype(np.float64))[(jv * 3 + 1) % 40] + 1.0
    for got in (k.run({"x": xv, "j": jv}), nk.simulate(k, {"x": xv, "j": jv})):
        np.testing.assert_allclose(got["y"], want, rtol=1e-5)  # exp on ScalarE: f32 rounding


@pytest.mark.parametrize("dt", DTYPES, **_ids)
def test_scatter_rows_with_duplicates_across_chunks_last_write_wins(dt):
    b = nk.Builder("s")
    d = b.add_input("d", (50, 6), dt[0])
    i = b.add_input("i", (200,), nk.int32)
    r = b.add_input("r", (200, 6), dt[0])
    b.set_outputs({"y": b.scatter_rows(d, i, r)})
    dv, rv = _data((50, 6), dt[1], 1), _data((200, 6), dt[1], 2)
    iv = np.random.default_rng(3).integers(0, 40, 200).astype(np.int32)  # rows 40..49 kept
    want = dv.copy()
    for k_, row in zip(iv, rv):
        want[k_] = row
    _all_three(b.graph, {"d": dv, "i": iv, "r": rv}, {"y": want})


@pytest.mark.parametrize("dt", DTYPES, **_ids)
def test_take_along_axis_and_one_hot_compiled(dt):
    b = nk.Builder("t")
    x = b.add_input("x", (8, 33), dt[0])
    i = b.add_input("i", (8, 5), nk.int32)
    b.set_outputs({"y": b.take_along_axis(x, i, -1), "o": b.one_hot(i, 7, dt[0])})
    xv = _data((8, 33), dt[1])
    iv = np.random.default_rng(4).integers(-33, 33, (8, 5)).astype(np.int32)
    y = np.array([[xv[r, c % 33] for c in iv[r]] for r in range(8)], xv.dtype)
    o = np.zeros((8, 5, 7), xv.dtype)
    for (r, c), v in np.ndenumerate(iv):
        if 0 <= v < 7:
            o[r, c, v] = 1
    _all_three(b.graph, {"x": xv, "i": iv}, {"y": y, "o": o})


@pytest.mark.parametrize("dt", DTYPES, **_ids)
def test_dynamic_slice_and_update_with_runtime_starts(dt):
    b = nk.Builder("kv")
    c = b.add_input("cache", (2, 64, 32), dt[0])
    k = b.add_input("k", (2, 1, 32), dt[0])
    p = b.add_input("pos", (), nk.int32)
    q = b.add_input("q", (), nk.int32)
    b.set_outputs(
        {"new": b.dynamic_update_slice(c, k, [0, p, 0]), "win": b.dynamic_slice(c, [q, p, 3], (1, 4, 20))}
    )
    cv, kv = _data((2, 64, 32), dt[1], 5), _data((2, 1, 32), dt[1], 6)
    for pv, qv in ((0, 0), (60, 1), (17, 1)):
        new = cv.copy()
        new[:, pv] = kv[:, 0]
        ins = {"cache": cv, "k": kv, "pos": np.array(pv, np.int32), "q": np.array(qv, np.int32)}
        _all_three(b.graph, ins, {"new": new, "win": cv[qv : qv + 1, pv : pv + 4, 3:23]})


def test_out_of_range_indices_raise_in_the_nki_interpreter_and_the_simulator():
    b = nk.Builder("g")
    t = b.add_input("t", (10, 4), nk.float32)
    i = b.add_input("i", (3,), nk.int32)
    b.set_outputs({"y": b.gather_rows(t, i)})
    k = nk.compile(b.graph)
    ins = {"t": np.zeros((10, 4), np.float32), "i": np.array([1, 10, 2], np.int32)}
    # Kernel.run and nk.simulate(kernel) check index inputs first (tensor/index_bounds.py); the
    # NKI graph and the emitted module run alone still stop at the DMA's bounds check
    with pytest.raises(
        nk.InterpretError, match=r"nki\.dma_gather: index 10 \(partition 1\) is out of range \[0, 10\)"
    ):
        nk.nki.run(k.nki, ins)
    with pytest.raises(
        nk.InterpretError, match=r"indirect DMA: index 10 \(partition 1\) is out of bounds for the 10 rows"
    ):
        nk.simulate(k.nki_source(), ins)


def test_a_dynamic_start_out_of_range_is_an_error_after_compiling_too():
    b = nk.Builder("d")
    x = b.add_input("x", (6, 8), nk.float32)
    p = b.add_input("p", (), nk.int32)
    b.set_outputs({"y": b.dynamic_slice(x, [p, 2], (3, 4))})
    k = nk.compile(b.graph)
    ins = {"x": np.zeros((6, 8), np.float32), "p": np.array(4, np.int32)}  # needs p <= 3
    with pytest.raises(nk.IndexOutOfRange, match=r"start 4 is out of bounds for axis 0 with size 6"):
        k.run(ins)  # checked before the kernel runs (tensor/index_bounds.py)
    # the kernel run without that check stops at its DMA's bounds check
    with pytest.raises(nk.InterpretError, match=r"out of range \[0, 48\)"):
        nk.nki.run(k.nki, {**ins, **k.constants})
    with pytest.raises(nk.InterpretError, match=r"out of bounds for the 48 rows"):
        nk.simulate(k.nki_source(), ins)


def test_emitted_source_uses_vector_offset_indirect_dma():
    b = nk.Builder("g")
    t = b.add_input("t", (300, 16), nk.bfloat16)
    i = b.add_input("i", (200,), nk.int32)
    d = b.add_input("d", (300, 16), nk.bfloat16)
    b.set_outputs({"y": b.gather_rows(t, i), "z": b.scatter_rows(d, i[:5], t[:5])})
    src = nk.compile(b.graph).nki_source()
    assert "src=t.ap(pattern=[[16, 128], [1, 16]], offset=0, vector_offset=ids, indirect_dim=0)" in src
    assert "vector_offset=" in src.split("nisa.dma_copy(dst=")[-1]  # the scatter's dst side


def test_embedding_workload_moves_only_the_selected_rows():
    from nkigen_lite.workloads import get_workload

    k = nk.compile(get_workload("embedding").graph())  # (151669, 1024) bf16, 128 ids
    (gather,) = _ops(k, N.DmaGatherOp)
    row_bytes = 1024 * 2
    assert gather.moved.size * 2 == 128 * row_bytes == 256 * 1024  # 128 rows = 256 KiB
    s = k.stats()
    # ids in (512 B), 128 rows gathered into SBUF, the same bytes stored: nothing else moves
    assert s.dma_bytes == 128 * 4 + 2 * 128 * row_bytes
    assert s.hbm_bytes == 128 * 4 + 2 * 128 * row_bytes
    # the minimum counts the rows the ids select, not the table: the kernel moves the minimum
    assert s.min_hbm_bytes == s.hbm_bytes and s.hbm_traffic_ratio == 1.0
    e = k.estimate()
    assert e.min_hbm_bytes == s.min_hbm_bytes and e.roofline_ns <= e.lower_bound_ns * (1 + 1e-9)


def test_embedding_workload_matches_its_float64_reference_three_ways():
    from nkigen_lite.workloads import get_workload

    w = get_workload("embedding")
    g = w.graph(vocab=3001, hidden=1024, tokens=300)
    ins = w.inputs(g)
    assert ins["ids"].max() > 2000  # ids cover the vocabulary, not only small integers
    ref = w.reference(**ins)["y"]
    k = nk.compile(g)
    for got in (nk.run(g, ins, mode="float64")["y"], k.run(ins)["y"], nk.simulate(k, ins)["y"]):
        np.testing.assert_array_equal(np.asarray(got, np.float64), ref)  # bf16 rows move exactly


@pytest.mark.parametrize("shape", [(256, 1, 1), (1, 128, 128)])
def test_ids_held_in_a_tile_of_more_than_two_dims_are_loaded_as_a_column(shape):
    """take_along_axis(s, argmax(s, -1, keepdims=True), -1) of a value a top-level group holds
    in an SBUF tile of rank 3 or more: the gather's index is a (P, 1) column (the emitted
    ``vector_offset`` takes a 2-D tensor; before: the held 4-D tile was passed and the simulator
    refused it). Exact: values are moved."""

    def fn(x):
        s = x.sum(axis=0, keepdims=True) if shape[0] > 1 else x % 7
        return np.take_along_axis(s, np.argmax(s, axis=-1, keepdims=True), axis=-1)

    x = (np.arange(np.prod(shape)).reshape(shape) % 5).astype(np.float32)
    k = nk.compile(fn, x)
    want = fn(x)
    for got in (k.run({"x": x})["y"], nk.simulate(k, {"x": x})["y"]):
        np.testing.assert_array_equal(got, want)
