"""Two-stage software pipelining of row loops (transforms/lower/stage_pipeline.py): the row
statistics of tile t+1 are issued before the normalisation of tile t. Counts and order on the
NKI IR; results bit for bit equal to the unpipelined kernel and close to float64 NumPy (fp32:
1e-5 relative and absolute, times 4 for row sums whose order differs from NumPy's) on the NKI
interpreter and the simulator."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllocOp, DmaCopyOp, ForiLoopOp
from nkigen_lite.testing.tolerance import assert_close, tolerance_for
from nkigen_lite.transforms.lower import deallocs, stage_pipeline
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.norms import layernorm_reference, rmsnorm_reference

F32 = nk.float32


def _unpipelined(monkeypatch, graph) -> nk.Kernel:
    with monkeypatch.context() as m:
        m.setattr(deallocs, "pipeline_stages", lambda g, t: 0)
        m.setattr(deallocs, "load_ahead", lambda g, t: 0)  # nor its loads alone (load_ahead.py)
        m.setattr(deallocs, "split_last_store", lambda *a: False)  # whole row tiles
        return nk.compile(graph)


def _executed(block, out=None, mult=1) -> list:
    """The executed instruction stream, loops unrolled (a loop index stays symbolic)."""
    out = [] if out is None else out
    for op in block:
        if isinstance(op, ForiLoopOp):
            for _ in range(op.trip_count):
                _executed(op.body, out)
        elif op.name not in ("nki.alloc", "nki.dealloc", "nki.hbm_view"):
            out.append(op)
    return out


def _staged(monkeypatch, graph) -> nk.Kernel:
    """The kernel as the pass leaves it: no straight-line reordering or engine moves after it
    (straight_order.py, engine_balance.py)."""
    with monkeypatch.context() as m:
        m.setattr(deallocs, "reorder_straight", lambda *a: False)
        m.setattr(deallocs, "balance_engines", lambda *a: 0)
        m.setattr(deallocs, "split_last_store", lambda *a: False)
        return nk.compile(graph)


def _stats(stream) -> list:
    """Positions of each row tile's statistics: the bn_aggr finishing its mean and variance
    (moments.py; the bn_stats before it share the row sum's loc)."""
    return [
        i for i, op in enumerate(stream) if op.loc == "tensor.reduce %reduce" and op.name == "nki.bn_aggr"
    ]


def _staged_unpipelined(monkeypatch, graph) -> nk.Kernel:
    with monkeypatch.context() as m:
        m.setattr(deallocs, "pipeline_stages", lambda g, t: 0)
        m.setattr(deallocs, "reorder_straight", lambda *a: False)
        m.setattr(deallocs, "balance_engines", lambda *a: 0)
        return nk.compile(graph)


def _norms(stream) -> list:
    """Positions of the full-row centred multiplies (not the column ops sharing their loc)."""
    return [
        i for i, op in enumerate(stream) if op.loc == "tensor.mul %mul_2" and op.access("dst").free_size > 1
    ]


def test_layernorm_statistics_of_next_tile_come_first(monkeypatch):
    """512x1024 layernorm (4 row tiles): tile t+1's statistics precede tile t's normalisation in
    program order, for every t; 4 trips become straight code, so the loaded tiles cross the
    stages in one buffer per trip (4), allocated outside any loop."""
    k = _staged(monkeypatch, get_workload("layernorm").graph(shape=(512, 1024)))
    stream = _executed(k.nki.body)
    sums = _stats(stream)
    norms = _norms(stream)
    assert len(sums) == len(norms) == 4
    for t in range(3):
        assert sums[t + 1] < norms[t]
    x_bufs = [op for op in k.nki.body if isinstance(op, AllocOp) and op.loc == "load %x"]
    assert len(x_bufs) == 4
    assert all(op.bufs == 1 for op in x_bufs)


def test_long_loop_crosses_stages_in_slots_buffers():
    """16 row tiles stay a loop: the crossing tiles use SLOTS buffers."""
    k = nk.compile(get_workload("layernorm").graph(shape=(2048, 1024)))
    x_bufs = [op for op in k.nki.body if isinstance(op, AllocOp) and op.loc == "load %x"]
    assert len(x_bufs) == stage_pipeline.SLOTS == 3


def test_unpipelined_layernorm_orders_tile_by_tile(monkeypatch):
    """Without the pass the same instructions run tile after tile (the counts the test above
    relies on differ)."""
    with monkeypatch.context() as m:
        m.setattr(deallocs, "reorder_straight", lambda *a: False)
        k = _unpipelined(m, get_workload("layernorm").graph(shape=(512, 1024)))
    stream = _executed(k.nki.body)
    sums = _stats(stream)
    norms = _norms(stream)
    assert all(sums[t + 1] > norms[t] for t in range(3))


@pytest.mark.parametrize(
    "name,shape", [("softmax", (2048, 4096)), ("rmsnorm", (2048, 4096)), ("layernorm", (512, 1024))]
)
def test_same_instructions_and_bytes(monkeypatch, name, shape):
    """Pipelining reorders: executed instructions per NKI op and DMA bytes are unchanged; a
    16-trip loop stays a loop (5 bodies of 3 trips, plus the prologue and the last trip)."""
    g = get_workload(name).graph(shape=shape)
    a = _staged(monkeypatch, g)
    with monkeypatch.context() as m:
        m.setattr(deallocs, "reorder_straight", lambda *a: False)
        m.setattr(deallocs, "balance_engines", lambda *a: 0)
        m.setattr(deallocs, "split_last_store", lambda *a: False)
        b = _unpipelined(m, g)
    sa, sb = a.stats(), b.stats()
    assert sa.instructions_dynamic == sb.instructions_dynamic
    assert sa.dma_bytes == sb.dma_bytes
    count = lambda k: sorted(op.name for op in _executed(k.nki.body))  # noqa: E731
    assert count(a) == count(b)
    loops = [op for op in a.nki.walk() if isinstance(op, ForiLoopOp)]
    if shape[0] == 2048:
        assert [lp.trip_count for lp in loops] == [5]
        assert sa.instructions_static * 2 < sa.instructions_dynamic


def test_scheduled_estimate_improves(monkeypatch):
    """The cost model's schedule (docs/costmodel.md) of the pipelined kernels is shorter."""
    for name, shape in (("softmax", (2048, 4096)), ("rmsnorm", (2048, 4096)), ("layernorm", (512, 1024))):
        g = get_workload(name).graph(shape=shape)
        assert nk.compile(g).estimate().scheduled_ns < _unpipelined(monkeypatch, g).estimate().scheduled_ns


ROWS = [256, 384, 512, 640, 896, 1000]  # 2..8 row tiles: no loop, one body, several, remainders


@pytest.mark.parametrize("rows", ROWS)
def test_layernorm_bitwise_equal_and_close_to_float64(monkeypatch, rows):
    g = get_workload("layernorm").graph(shape=(rows, 96))
    rng = np.random.default_rng(rows)
    feeds = {
        "x": (rng.standard_normal((rows, 96)) * 2 + 1).astype(np.float32),
        "w": rng.standard_normal(96).astype(np.float32),
        "b": rng.standard_normal(96).astype(np.float32),
    }
    k = nk.compile(g)
    got = k.run(feeds)["y"]
    np.testing.assert_array_equal(got, _unpipelined(monkeypatch, g).run(feeds)["y"])
    ref = layernorm_reference(**feeds)["y"]
    rtol, atol = tolerance_for(F32)
    assert_close(got, ref, F32, what=f"layernorm {rows} rows", rtol=4 * rtol, atol=4 * atol)
    assert_close(nk.simulate(k, feeds)["y"], ref, F32, what="simulator", rtol=4 * rtol, atol=4 * atol)


@pytest.mark.parametrize("rows", [384, 1152])
def test_rmsnorm_and_softmax_close_to_float64(rows):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, 256)).astype(np.float32)
    w = rng.standard_normal(256).astype(np.float32)
    rtol, atol = tolerance_for(F32)
    k = nk.compile(get_workload("rmsnorm").graph(shape=(rows, 256)))
    ref = rmsnorm_reference(x, w)["y"]
    for got in (k.run({"x": x, "w": w})["y"], nk.simulate(k, {"x": x, "w": w})["y"]):
        assert_close(got, ref, F32, what="rmsnorm", rtol=4 * rtol, atol=4 * atol)
    k = nk.compile(get_workload("softmax").graph(shape=(rows, 256)))
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    ref = e / e.sum(-1, keepdims=True)
    (name,) = k.output_names
    for got in (k.run({"x": x})[name], nk.simulate(k, {"x": x})[name]):
        assert_close(got, ref, F32, what="softmax", rtol=4 * rtol, atol=4 * atol)


def test_elementwise_loop_without_statistics_is_left_alone():
    """No per-partition column in the body: nothing to pipeline (one rotating load alloc)."""
    b = nk.Builder("chain")
    x = b.add_input("x", (1024, 2048), F32)
    b.set_outputs({"y": b.exp(x) * 2.0 + 1.0})
    k = nk.compile(b.graph)
    assert not [op for op in k.nki.body if isinstance(op, AllocOp) and op.loc == "load %x"]
    loads = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp) and op.loc == "load %x"]
    assert len(loads) == 1


def test_deterministic():
    a, b = (nk.compile(get_workload("softmax").graph(shape=(2048, 4096))) for _ in range(2))
    assert str(a.nki) == str(b.nki)


def _mlp_back():
    """A decoder layer's back half (tests/lower/test_mlp_prologue.py) at 2048 rows: its
    prologue (O projection, residual, rmsnorm, xᵀ) is a 2-trip loop of 8 row tiles whose
    matmuls run in nested K-segment loops."""
    from tests.lower.test_mlp_prologue import _inputs, back

    args = _inputs(2048, 512, 256, 256, seed=7)
    return nk.trace(back).trace(*args), args


def _at(ops, name: str, loc: str) -> list:
    """Positions of the ``name`` ops whose source op (``loc`` before " at file:line") is ``loc``."""
    return [i for i, op in enumerate(ops) if op.name == name and (op.loc or "").split(" at ")[0] == loc]


def test_loop_with_nested_matmul_loops_is_pipelined(monkeypatch):
    """The prologue loop holds nested loops (in stage 1): it is pipelined, and since both stages
    run TensorE work, stage 2's instructions before its first transpose (tile 0's rmsnorm
    multiplies) go after stage 1's work before its first matmul (tile 1's Oᵀ staging) and
    before tile 1's O projection; tile 0's xᵀ transposes come after every O-projection matmul."""
    g, _ = _mlp_back()
    plain = _staged_unpipelined(monkeypatch, g)
    assert any(
        isinstance(op, ForiLoopOp)
        and any(isinstance(o, ForiLoopOp) for o in op.body)
        and any((o.loc or "").startswith("keep") for o in op.body)
        for op in plain.nki.body
    )
    k = _staged(monkeypatch, g)
    ops = list(k.nki.body)
    assert not any(
        isinstance(op, ForiLoopOp) and any((o.loc or "").startswith("keep") for o in op.body) for op in ops
    )
    o_mm = _at(ops, "nki.nc_matmul", "tensor.matmul %matmul") + _at(
        ops, "nki.fori_loop", "tensor.matmul %matmul"
    )
    o_t = _at(ops, "nki.nc_transpose", "tensor.matmul %matmul")
    x_t = _at(ops, "nki.nc_transpose", "tensor.matmul %matmul_1")
    muls = _at(ops, "nki.tensor_scalar", "tensor.mul %mul_1")
    assert len(o_mm) == 2 * 16 and len(o_t) == 2 * 32 and len(x_t) == 2 * 16 and len(muls) == 2 * 8
    assert max(o_mm) < min(x_t)
    g1_first_mm = sorted(o_mm)[16]
    assert sorted(o_t)[32] < muls[0] and muls[7] < g1_first_mm


def test_nested_loop_pipeline_bitwise_equal_and_close(monkeypatch):
    """Same instructions and results bit for bit as the unpipelined kernel (NKI interpreter),
    close to float64 NumPy (bf16: 3% of the largest magnitude, the tolerance of
    tests/lower/test_mlp_prologue.py) on the interpreter and the simulator."""
    from tests.lower.test_mlp_prologue import _reference

    g, args = _mlp_back()
    ins = dict(zip(g.input_names, args))
    k = nk.compile(g)
    plain = _unpipelined(monkeypatch, g)
    assert k.stats().instructions_dynamic == plain.stats().instructions_dynamic
    assert k.stats().dma_bytes == plain.stats().dma_bytes
    (name,) = list(g.outputs)
    got = k.run(ins)[name]
    np.testing.assert_array_equal(got, plain.run(ins)[name])
    want = _reference(*args)
    tol = 0.03 * np.abs(want).max()
    for out in (got, nk.simulate(k, ins)[name]):
        np.testing.assert_allclose(out.astype(np.float64), want, rtol=0, atol=tol)


def _mean_var(x):
    return x.mean(-1), x.var(-1)


@pytest.mark.parametrize("rows", [384, 1000, 1152])
def test_row_statistics_with_two_stores_are_pipelined(monkeypatch, rows):
    """x.mean(-1), x.var(-1): no full-tile pass after the statistics, but two column stores a
    tile. Tile t+1's bn_aggr now comes before tile t's stores (before: tile by tile, the next
    load queued behind a store waiting for the statistics). Bit for bit equal to the unpipelined
    kernel; against float64: fp32 rtol 4e-5 (fp32 statistics of 300-element rows)."""
    x = (np.random.default_rng(rows).standard_normal((rows, 300)) * 2 + 3).astype(np.float32)
    g = nk.trace(_mean_var).trace(nk.TensorType((rows, 300), F32))
    k = nk.compile(g)
    stream = _executed(k.nki.body)
    aggr = [i for i, op in enumerate(stream) if op.name == "nki.bn_aggr"]
    stores = [i for i, op in enumerate(stream) if isinstance(op, DmaCopyOp) and op.loc.startswith("store")]
    assert len(aggr) == -(-rows // 128) and len(stores) == 2 * len(aggr)
    if rows > 128 * 2 * stage_pipeline.SLOTS:  # a loop (fewer trips: straight code, reordered later)
        assert aggr[1] < stores[0]
    outs = k.run({"x": x})
    ref = _mean_var(x.astype(np.float64))
    plain = _unpipelined(monkeypatch, g).run({"x": x})
    for name, want in zip(k.output_names, ref):
        np.testing.assert_array_equal(outs[name], plain[name])
        np.testing.assert_allclose(outs[name], want, rtol=4e-5, atol=1e-6)
        np.testing.assert_allclose(nk.simulate(k, {"x": x})[name], want, rtol=4e-5, atol=1e-6)


def test_row_statistics_with_two_stores_schedule_shorter(monkeypatch):
    """2048 x 4096 f32 mean and variance: the scheduled estimate drops (226.7 -> 120.2 us)."""
    g = nk.trace(_mean_var).trace(nk.TensorType((2048, 4096), F32))
    assert nk.compile(g).estimate().scheduled_ns < 0.6 * _unpipelined(monkeypatch, g).estimate().scheduled_ns
