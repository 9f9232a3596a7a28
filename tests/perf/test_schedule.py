"""The list scheduler on hand-built NKI programs whose schedule is computed by hand.

Constants (facts sheet, via the Target): HW-DGE issue 600 ns per dma_copy on 2 queues (round
robin), first-byte latency L = 1,300 ns, dependency latencies (drain + semaphore-to-start, ns)
DMA->compute 0 + 268 (ScalarE/VectorE), ScalarE/VectorE -> DMA 161 + 0, VectorE -> ScalarE
161 + 268, same engine ~100 engine cycles. Instruction times: VectorE fp32 single input
max(64, N) cycles at 0.96 GHz, ScalarE max(64, N) at 1.2 GHz, GpSimd 150 + N at 1.2 GHz.
DMA transfer times come from the DMA model (tested on its own in test_dma_model.py). Times are
sums of a few floats: tolerance 1e-9 relative.
"""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ts
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf import estimate
from nkigen_lite.perf import schedule as sched_mod
from nkigen_lite.perf.instruction_cost import instruction_cost
from nkigen_lite.perf.schedule import STEADY_STATE_ITERATIONS, Scheduler

ISSUE, L = 600.0, 1300.0
V, S, G = 0.96, 1.2, 1.2  # GHz: ns = cycles / GHz
DMA_TO_ENGINE, ENGINE_TO_DMA, V_TO_S, SAME_V = 268.0, 161.0, 161.0 + 268.0, 100 / 0.96


def _schedule(graph: nk.Graph) -> Scheduler:
    s = Scheduler(TRN2, trace=True)
    s.run(graph.body)
    return s


def _times(s: Scheduler) -> dict:
    """{loc: (start, end)} of every traced instruction (each test gives distinct locs)."""
    return {op.loc: (t0, t1) for op, t0, t1 in s.trace}


def _transfer(graph: nk.Graph, loc: str) -> float:
    op = next(o for o in graph.walk() if isinstance(o, DmaCopyOp) and o.loc == loc)
    return instruction_cost(op, TRN2).ns


def _fork() -> nk.Graph:
    """t = load x; u = exp(t) on ScalarE and v = 2 t on VectorE (independent); store both."""
    b = nk.nki.Builder("fork")
    x = b.add_input("x", (128, 512), nk.float32)
    y1 = b.alloc((128, 512), nk.float32, "hbm", name="y1")
    y2 = b.alloc((128, 512), nk.float32, "hbm", name="y2")
    t, u, v = b.alloc((128, 512)), b.alloc((128, 512)), b.alloc((128, 512))
    b.loc = "load"
    b.dma_copy(t, x)
    b.loc = "exp"
    b.activation(u, "exp", t)
    b.loc = "mul"
    b.tensor_scalar(v, t, "multiply", 2.0)
    b.loc = "store u"
    b.dma_copy(y1, u)
    b.loc = "store v"
    b.dma_copy(y2, v)
    for a in (t, u, v):
        b.dealloc(a)
    b.set_outputs({"y1": y1, "y2": y2})
    return b.graph


def test_two_independent_engines_overlap():
    g = _fork()
    T = _transfer(g, "load")  # every DMA moves the same 256 KiB
    times = _times(_schedule(g))
    load_end = ISSUE + L + T  # queue 0 from 0; transfer after L
    assert times["load"] == pytest.approx((0, load_end), rel=1e-9)
    # ScalarE and VectorE both start when the load's data is visible, side by side
    assert times["exp"] == pytest.approx((load_end + 268, load_end + 268 + 512 / S), rel=1e-9)
    assert times["mul"] == pytest.approx((load_end + 268, load_end + 268 + 512 / V), rel=1e-9)
    ready_u = times["exp"][1] + ENGINE_TO_DMA
    assert times["store u"] == pytest.approx((ready_u, ready_u + ISSUE + L + T), rel=1e-9)
    # the second store issues on queue 0 as soon as v is drained, but its transfer waits for the
    # DMA engines, busy with the first store
    ready_v = times["mul"][1] + ENGINE_TO_DMA
    assert times["store v"] == pytest.approx((ready_v, times["store u"][1] + T), rel=1e-9)
    e = estimate(g)
    assert e.scheduled_ns == pytest.approx(times["store v"][1], rel=1e-9)
    assert e.scheduled_ns < e.serial_ns


def _chain() -> nk.Graph:
    """load -> ScalarE exp -> VectorE x2 -> VectorE +1 -> store, each reading the previous."""
    b = nk.nki.Builder("chain")
    x = b.add_input("x", (128, 512), nk.float32)
    y = b.alloc((128, 512), nk.float32, "hbm", name="y")
    t, u = b.alloc((128, 512)), b.alloc((128, 512))
    b.loc = "load"
    b.dma_copy(t, x)
    b.loc = "exp"
    b.activation(u, "exp", t)
    b.loc = "mul"
    b.tensor_scalar(t, u, "multiply", 2.0)
    b.loc = "add"
    b.tensor_scalar(u, t, "add", 1.0)
    b.loc = "store"
    b.dma_copy(y, u)
    b.dealloc(t)
    b.dealloc(u)
    b.set_outputs({"y": y})
    return b.graph


def test_a_raw_chain_serialises():
    g = _chain()
    T = _transfer(g, "load")
    expected = (
        ISSUE
        + L
        + T
        + DMA_TO_ENGINE
        + 512 / S
        + V_TO_S
        + 512 / V
        + SAME_V
        + 512 / V
        + ENGINE_TO_DMA
        + ISSUE
        + L
        + T
    )
    e = estimate(g)
    assert e.scheduled_ns == pytest.approx(expected, rel=1e-9)
    # nothing overlaps in a chain, so the schedule is the serial time
    assert e.scheduled_ns == pytest.approx(e.serial_ns, rel=1e-9)


def _single_buffer(trips: int, buffers: int = 1) -> nk.Graph:
    """Per row block: load t, t *= 2 on VectorE, store t; ``buffers`` tiles used in rotation
    (1: the loop body's own tile, reused by every iteration; 2: unrolled by hand over two
    tiles)."""
    b = nk.nki.Builder("rows")
    x = b.add_input("x", (128 * trips, 512), nk.float32)
    y = b.alloc((128 * trips, 512), nk.float32, "hbm", name="y")

    def body(t, i):
        b.loc = "load"
        b.dma_copy(t, x[ts(i, 128), :])
        b.loc = "mul"
        b.tensor_scalar(t, t, "multiply", 2.0)
        b.loc = "store"
        b.dma_copy(y[ts(i, 128), :], t)

    if buffers == 1:
        with b.fori_loop(0, trips) as i:
            t = b.alloc((128, 512))
            body(t, i)
            b.dealloc(t)
    else:
        tiles = [b.alloc((128, 512)) for _ in range(buffers)]
        for i in range(trips):
            body(tiles[i % buffers], i)
        for t in tiles:
            b.dealloc(t)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize("trips", [1, 3, STEADY_STATE_ITERATIONS + 1, 40])
def test_a_war_on_a_single_buffer_serialises_dma_and_compute(trips):
    g = _single_buffer(trips)
    T = _transfer(g, "load")
    # the load of iteration i+1 overwrites t: it waits for the store of iteration i (DMA -> DMA,
    # no latency), so nothing overlaps: every iteration is load, multiply, store back to back
    period = ISSUE + L + T + DMA_TO_ENGINE + 512 / V + ENGINE_TO_DMA + ISSUE + L + T
    e = estimate(g)
    assert e.scheduled_ns == pytest.approx(trips * period, rel=1e-9)
    assert e.scheduled_ns == pytest.approx(e.serial_ns, rel=1e-9)
    if trips > 1:
        times = [(op.loc, t0, t1) for op, t0, t1 in _schedule(g).trace]
        store_end = next(t1 for loc, _, t1 in times if loc == "store")
        second_load = [t0 for loc, t0, _ in times if loc == "load"][1]
        assert second_load == pytest.approx(store_end, rel=1e-12)


def test_two_buffers_overlap_what_one_buffer_serialises():
    one, two = estimate(_single_buffer(8)), estimate(_single_buffer(8, buffers=2))
    assert two.scheduled_ns < 0.75 * one.scheduled_ns
    assert two.lower_bound_ns == pytest.approx(one.lower_bound_ns, rel=1e-12)
    assert two.serial_ns <= one.serial_ns


def _small_dmas(n: int) -> nk.Graph:
    """n loads of one 512-byte row into n separate tiles, then n stores (every DMA tiny)."""
    b = nk.nki.Builder("small")
    x = b.add_input("x", (n, 128), nk.float32)
    y = b.alloc((n, 128), nk.float32, "hbm", name="y")
    tiles = [b.alloc((1, 128)) for _ in range(n)]
    for i, t in enumerate(tiles):
        b.loc = "load"
        b.dma_copy(t, x[i : i + 1, :])
    for i, t in enumerate(tiles):
        b.loc = "store"
        b.dma_copy(y[i : i + 1, :], t)
    for t in tiles:
        b.dealloc(t)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize("n", [8, 16, 31])
def test_each_dma_pays_its_fixed_cost_on_its_queue(n):
    g = _small_dmas(n)
    T = _transfer(g, "load")
    assert T < ISSUE / 2  # transfers never queue behind each other
    trace = _schedule(g).trace
    # 2n DMAs alternate between the two HW-DGE queues, each occupying its queue for 600 ns;
    # a store's data is ready long before its queue slot (n >= 8), so issue is all that counts
    issues = [t0 for _, t0, _ in trace]
    assert issues == pytest.approx([(j // 2) * ISSUE for j in range(2 * n)], rel=1e-12, abs=1e-9)
    last_issue = (2 * n - 1) // 2 * ISSUE
    e = estimate(g)
    # the last DMA: issue, first-byte latency, transfer (one earlier transfer may share its slot)
    assert e.scheduled_ns == pytest.approx(trace[-1][2], rel=1e-12)
    assert last_issue + ISSUE + L + T <= e.scheduled_ns <= last_issue + ISSUE + L + 2 * T + 1e-9
    assert e.by_resource_ns["dma_queue0"] == pytest.approx(n * ISSUE, rel=1e-12)


def _port(dtype, gpsimd: bool = True) -> nk.Graph:
    """Independent VectorE copy (x -> t2) and GpSimd iota (into a separate tile)."""
    b = nk.nki.Builder("port")
    x = b.add_input("x", (128, 2048), dtype)
    y = b.alloc((128, 2048), dtype, "hbm", name="y")
    t, t2 = b.alloc((128, 2048), dtype), b.alloc((128, 2048), dtype)
    idx = b.alloc((128, 512), nk.int32)
    b.loc = "load"
    b.dma_copy(t, x)
    if gpsimd:
        b.loc = "iota"
        b.iota(idx, [[1, 512]], channel_multiplier=0)
    b.loc = "copy"
    b.tensor_copy(dst=t2, src=t)
    b.loc = "store"
    b.dma_copy(y, t2)
    for a in (t, t2, idx):
        b.dealloc(a)
    b.set_outputs({"y": y})
    return b.graph


def test_vector_perf_mode_and_gpsimd_share_the_sbuf_port():
    iota = (150 + 512) / G  # GpSimd: 150 + N cycles
    # bf16 SBUF -> SBUF copy runs in VectorE performance mode (N/4): it needs the shared bus,
    # held by the iota that started at time 0
    times = _times(_schedule(_port(nk.bfloat16)))
    assert times["iota"] == pytest.approx((0, iota), rel=1e-12)
    load_ready = times["load"][1] + DMA_TO_ENGINE
    assert load_ready > iota  # the iota finished long before
    assert times["copy"][0] == pytest.approx(load_ready, rel=1e-12)
    # make the copy ready first: no load, the iota after it waits for the port
    b = nk.nki.Builder("port2")
    x = b.add_input("x", (128, 2048), nk.bfloat16)
    y = b.alloc((128, 2048), nk.bfloat16, "hbm", name="y")
    t2, idx = b.alloc((128, 2048), nk.bfloat16), b.alloc((128, 512), nk.int32)
    b.loc = "zero"
    b.memset(t2, 0.0)  # VectorE, N/2: not performance mode
    b.loc = "copy"
    b.tensor_scalar(t2, t2, "add", 1.0)  # bf16 SBUF, unit stride: perf mode N/4
    b.loc = "iota"
    b.iota(idx, [[1, 512]], channel_multiplier=0)
    b.loc = "store"
    b.dma_copy(y, t2)
    b.dealloc(t2)
    b.dealloc(idx)
    b.set_outputs({"y": y})
    times = _times(_schedule(b.graph))
    zero = 2048 / 2 / V
    assert times["zero"] == pytest.approx((0, zero), rel=1e-12)
    copy = (zero + SAME_V, zero + SAME_V + 2048 / 4 / V)
    assert times["copy"] == pytest.approx(copy, rel=1e-12)
    # the iota does not depend on anything, but the shared port is busy until the copy ends
    # (the memset before it, not in performance mode, did not hold it)
    assert times["iota"] == pytest.approx((copy[1], copy[1] + iota), rel=1e-12)
    del x


def test_fp32_vector_work_does_not_hold_the_port():
    times = _times(_schedule(_port(nk.float32)))
    assert times["iota"][0] == 0.0
    s = estimate(_port(nk.float32))
    assert s.by_resource_ns["vector_gpsimd_port"] == pytest.approx((150 + 512) / G, rel=1e-12)


def _loop_vs_unrolled(trips: int, unrolled: bool) -> nk.Graph:
    """A loop body with two single-buffered tiles on three engines and a loop-carried VectorE
    accumulator: load u; u = exp(u) (ScalarE); acc += u (VectorE); v = u * u (GpSimd); store v."""
    b = nk.nki.Builder("lvu")
    x = b.add_input("x", (128 * trips, 256), nk.float32)
    y = b.alloc((128 * trips, 256), nk.float32, "hbm", name="y")
    acc = b.alloc((128, 256))
    b.memset(acc, 0.0)
    u, v = b.alloc((128, 256)), b.alloc((128, 256))

    def body(i):
        b.dma_copy(u, x[ts(i, 128), :])
        b.activation(u, "exp", u)
        b.tensor_tensor(acc, acc, u, "add")
        b.tensor_tensor(v, u, u, "multiply", engine="gpsimd")
        b.dma_copy(y[ts(i, 128), :], v)

    if unrolled:
        for i in range(trips):
            body(i)
    else:
        with b.fori_loop(0, trips) as i:
            body(i)
    z = b.alloc((1, 256), nk.float32, "hbm", name="z")
    b.dma_copy(z, acc[0:1, :])
    for a in (acc, u, v):
        b.dealloc(a)
    b.set_outputs({"y": y, "z": z})
    return b.graph


@pytest.mark.parametrize("trips", [1, 2, STEADY_STATE_ITERATIONS, STEADY_STATE_ITERATIONS + 3, 25])
def test_a_loop_schedules_like_its_unrolled_body(trips):
    looped, unrolled = estimate(_loop_vs_unrolled(trips, False)), estimate(_loop_vs_unrolled(trips, True))
    for name in ("scheduled_ns", "serial_ns", "dependency_ns", "lower_bound_ns"):
        assert getattr(looped, name) == pytest.approx(getattr(unrolled, name), rel=1e-9), name


def test_scheduling_work_does_not_grow_with_trip_counts():
    body = 5
    for trips in (10, 1000):
        s = _schedule(_loop_vs_unrolled(trips, False))
        # the memset, STEADY_STATE_ITERATIONS scheduled iterations, the final store
        assert len(s.trace) == 1 + STEADY_STATE_ITERATIONS * body + 1
    e10, e1000 = (estimate(_loop_vs_unrolled(n, False)) for n in (10, 1000))
    per_iteration = (e1000.scheduled_ns - e10.scheduled_ns) / 990
    assert e1000.instructions == 2 + 1000 * body
    # the steady-state period is at least the busiest resource's work per iteration
    busiest = max(e1000.by_resource_ns.values()) / 1000
    assert per_iteration >= busiest * (1 - 1e-9)


def _one_dma_per_iteration(trips: int) -> nk.Graph:
    """load t (2 rotating buffers); acc += t on VectorE: one DMA per iteration, so round robin
    puts consecutive iterations' loads on alternate HW-DGE queues."""
    b = nk.nki.Builder("odd_dmas")
    x = b.add_input("x", (128 * trips, 2048), nk.float32)
    z = b.alloc((128, 2048), nk.float32, "hbm", name="z")
    acc = b.alloc((128, 2048))
    b.memset(acc, 0.0)

    with b.fori_loop(0, trips) as i:
        t = b.alloc((128, 2048), bufs=2)
        b.dma_copy(t, x[ts(i, 128), :])
        b.tensor_tensor(acc, acc, t, "add")
        b.dealloc(t)
    b.dma_copy(z, acc)
    b.dealloc(acc)
    b.set_outputs({"z": z})
    return b.graph


def test_extrapolation_with_one_dma_per_iteration_matches_the_full_schedule(monkeypatch):
    """A queue used every other iteration advances by two periods per iteration: the
    steady-state period takes the queues together, so 8 scheduled iterations extrapolate to the
    schedule of all 40 (the loop scheduled in full, STEADY_STATE_ITERATIONS raised)."""
    g = _one_dma_per_iteration(40)
    extrapolated = estimate(g).scheduled_ns
    monkeypatch.setattr(sched_mod, "STEADY_STATE_ITERATIONS", 1000)
    full = estimate(g).scheduled_ns
    assert extrapolated == pytest.approx(full, rel=0.01)


def test_a_transfer_ready_early_fills_an_idle_gap_of_the_dma_engines():
    """load a; long VectorE work on a; store a; load b (independent, later in program order):
    b's transfer runs while VectorE works, not after the store."""
    b = nk.nki.Builder("gap")
    x = b.add_input("x", (128, 4096), nk.float32)
    z = b.add_input("z", (128, 4096), nk.float32)
    y = b.alloc((128, 4096), nk.float32, "hbm", name="y")
    w = b.alloc((128, 4096), nk.float32, "hbm", name="w")
    t, u = b.alloc((128, 4096)), b.alloc((128, 4096))
    b.loc = "load a"
    b.dma_copy(t, x)
    b.loc = "work"
    b.tensor_scalar(t, t, "multiply", 2.0)
    b.loc = "store a"
    b.dma_copy(y, t)
    b.loc = "load b"
    b.dma_copy(u, z)
    b.loc = "store b"
    b.dma_copy(w, u)
    b.dealloc(t)
    b.dealloc(u)
    b.set_outputs({"y": y, "w": w})
    g = b.graph
    T = _transfer(g, "load a")
    times = _times(_schedule(g))
    work_end = ISSUE + L + T + DMA_TO_ENGINE + 4096 / V
    assert times["work"][1] == pytest.approx(work_end, rel=1e-12)
    # load b: third DMA, queue 0 (free at 600 ns); its transfer follows load a's at once
    assert times["load b"] == pytest.approx((ISSUE, ISSUE + L + T + T), rel=1e-12)
    # ... in the gap before the store's transfer, scheduled earlier in program order
    assert times["load b"][1] <= times["store a"][1] - T
    assert times["store a"][1] == pytest.approx(work_end + ENGINE_TO_DMA + ISSUE + L + T, rel=1e-12)


def test_transfers_are_served_in_order_of_readiness_not_program_order():
    """load a (small); short VectorE work; store a; load b (large, independent, later in
    program order). b's transfer is ready before the store's and does not fit any idle gap:
    the DMA engines serve it first (first ready, first served across queues), then the store.
    Under program-order booking the load would queue behind the store."""
    b = nk.nki.Builder("ready_order")
    x = b.add_input("x", (128, 256), nk.float32)
    z = b.add_input("z", (128, 8192), nk.float32)
    y = b.alloc((128, 256), nk.float32, "hbm", name="y")
    t, u = b.alloc((128, 256)), b.alloc((128, 8192))
    b.loc = "load a"
    b.dma_copy(t, x)
    b.loc = "work"
    b.tensor_scalar(t, t, "multiply", 2.0)
    b.loc = "store a"
    b.dma_copy(y, t)
    b.loc = "load b"
    b.dma_copy(u, z)
    b.loc = "use b"
    b.tensor_scalar(u, u, "multiply", 2.0)
    b.dealloc(t)
    b.dealloc(u)
    b.set_outputs({"y": y})
    g = b.graph
    ta, tb = _transfer(g, "load a"), _transfer(g, "load b")
    times = _times(_schedule(g))
    load_a_end = ISSUE + L + ta
    work_end = load_a_end + DMA_TO_ENGINE + 256 / V
    store_ready = work_end + ENGINE_TO_DMA + ISSUE + L
    load_b_ready = 2 * ISSUE + L  # third DMA, queue 0 (free at 600 ns)
    assert load_b_ready < store_ready < max(load_b_ready, load_a_end) + tb  # no gap fits b
    assert times["load b"] == pytest.approx((ISSUE, max(load_b_ready, load_a_end) + tb), rel=1e-12)
    assert times["store a"][1] == pytest.approx(times["load b"][1] + ta, rel=1e-12)


def test_the_shared_port_is_critical_only_when_busier_than_gpsimd():
    # fp32: VectorE at its base rate does not use the port, so it is exactly GpSimd's busy time
    e = estimate(_port(nk.float32))
    assert e.by_resource_ns["vector_gpsimd_port"] == e.by_resource_ns["gpsimd"]
    assert e.critical_engine != "vector_gpsimd_port"
    # bf16: the performance-mode copy adds its time to the port
    e = estimate(_port(nk.bfloat16))
    assert e.by_resource_ns["vector_gpsimd_port"] == pytest.approx(
        e.by_resource_ns["gpsimd"] + e.by_resource_ns["vector"], rel=1e-12
    )


def _rotating(trips: int, bufs: int) -> nk.Graph:
    """``_single_buffer``'s body in a loop whose tile has ``bufs`` rotating buffers."""
    b = nk.nki.Builder("rows")
    x = b.add_input("x", (128 * trips, 512), nk.float32)
    y = b.alloc((128 * trips, 512), nk.float32, "hbm", name="y")
    with b.fori_loop(0, trips) as i:
        t = b.alloc((128, 512), bufs=bufs)
        b.loc = "load"
        b.dma_copy(t, x[ts(i, 128), :])
        b.loc = "mul"
        b.tensor_scalar(t, t, "multiply", 2.0)
        b.loc = "store"
        b.dma_copy(y[ts(i, 128), :], t)
        b.dealloc(t)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize("trips", [2, 5, STEADY_STATE_ITERATIONS])
def test_rotating_buffers_schedule_like_tiles_rotated_by_hand(trips):
    rotating, by_hand = estimate(_rotating(trips, 2)), estimate(_single_buffer(trips, buffers=2))
    for name in ("scheduled_ns", "serial_ns", "lower_bound_ns"):
        assert getattr(rotating, name) == pytest.approx(getattr(by_hand, name), rel=1e-9), name
    one = estimate(_rotating(trips, 1)).scheduled_ns
    assert one == pytest.approx(estimate(_single_buffer(trips)).scheduled_ns, rel=1e-9)


@pytest.mark.parametrize("trips", [STEADY_STATE_ITERATIONS + 4, 40])
def test_extrapolated_rotating_loops_stay_between_the_bounds_and_beat_one_buffer(trips):
    one, two = estimate(_rotating(trips, 1)), estimate(_rotating(trips, 2))
    by_hand = estimate(_single_buffer(trips, 2))
    assert two.lower_bound_ns * (1 - 1e-9) <= two.scheduled_ns <= two.serial_ns * (1 + 1e-9)
    assert two.scheduled_ns < 0.75 * one.scheduled_ns
    # the extrapolation of the steady state matches the fully scheduled hand-rotated loop
    assert two.scheduled_ns == pytest.approx(by_hand.scheduled_ns, rel=0.02)
