"""How the kernel estimate combines instruction costs: DMA fixed costs, dependency latencies in
the serial figure, loops (a loop equals its unrolled body), and errors.

Expected numbers use the facts sheet constants: HW-DGE issue 600 ns per dma_copy on 2 DGEs,
first-byte latency 1,300 ns, semaphore-to-start / write-drain (ns) Tensor 81 / 150, Vector
268 / 161, GpSimd 186 / 218 (ScalarE assumed equal to VectorE, none for DMA), and ~100 engine
cycles between dependent instructions on one engine. Exact arithmetic: tolerance 1e-9 relative.
"""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite import BuildError, VerifyError
from nkigen_lite.nki import ts
from nkigen_lite.nki.ops import ForiLoopOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf import estimate
from nkigen_lite.perf.costmodel import dependency_latency
from nkigen_lite.perf.instruction_cost import instruction_cost

from .kernels import copy_through, tile_add

ISSUE, L = 600.0, 1300.0


def chain() -> nk.Graph:
    """load -> ScalarE exp -> VectorE x2 -> VectorE +1 -> store, each reading the previous."""
    b = nk.nki.Builder("chain")
    x = b.add_input("x", (128, 512), nk.float32)
    y = b.alloc((128, 512), nk.float32, "hbm", name="y")
    t, u = b.alloc((128, 512)), b.alloc((128, 512))
    b.dma_copy(t, x)
    b.activation(u, "exp", t)
    b.tensor_scalar(t, u, "multiply", 2.0)
    b.tensor_scalar(u, t, "add", 1.0)
    b.dma_copy(y, u)
    b.dealloc(t)
    b.dealloc(u)
    b.set_outputs({"y": y})
    return b.graph


START = {"tensor": 81, "vector": 268, "scalar": 268, "gpsimd": 186, "dma": 0}
DRAIN = {"tensor": 150, "vector": 161, "scalar": 161, "gpsimd": 218, "dma": 0}
SAME = {"tensor": 0, "vector": 100 / 0.96, "scalar": 100 / 1.2, "gpsimd": 100 / 1.2, "dma": 0}


@pytest.mark.parametrize("producer", list(START))
@pytest.mark.parametrize("consumer", list(START))
def test_dependency_latency_table(producer, consumer):
    expected = SAME[consumer] if producer == consumer else DRAIN[producer] + START[consumer]
    assert dependency_latency(producer, consumer, TRN2) == pytest.approx(expected, rel=1e-12)


def test_serial_adds_a_latency_per_dependency():
    e = estimate(chain())
    expected = (
        268  # DMA -> ScalarE: no DMA drain, ScalarE semaphore-to-start
        + 161
        + 268  # ScalarE -> VectorE
        + 100 / 0.96  # VectorE -> VectorE: ~100 cycles
        + 161
    )  # VectorE -> DMA: drain (the DMA's start is its first-byte latency)
    assert e.dependency_ns == pytest.approx(expected, rel=1e-9)
    busy = sum(e.by_engine_ns[k] for k in ("tensor", "vector", "scalar", "gpsimd"))
    assert e.serial_ns == pytest.approx(busy + e.dma_transfer_ns + 2 * (ISSUE + L) + expected, rel=1e-9)


def test_overlapped_dma_time_hides_latency_and_issue_behind_transfers():
    e = estimate(tile_add(128, 512))  # 3 DMAs: 1,800 ns issue on 2 DGEs
    assert e.dma_issue_ns == 3 * ISSUE
    assert e.by_engine_ns["dma"] == pytest.approx(L + max(e.dma_transfer_ns, 3 * ISSUE / 2), rel=1e-9)


def test_many_small_dmas_are_issue_bound():
    e = estimate(tile_add(128 * 16, 16))  # 48 DMAs of 8 KiB
    assert e.by_engine_ns["dma"] == pytest.approx(L + 48 * ISSUE / 2, rel=1e-9)
    assert e.dma_transfer_ns < 48 * ISSUE / 2


def _loop_chain(trips: int, unrolled: bool) -> nk.Graph:
    """A loop-carried chain: t is loaded once; each iteration doubles t on VectorE (reading the
    previous iteration's t), loads a row block, multiplies it by t, applies exp on ScalarE and
    stores it."""
    b = nk.nki.Builder("loop_chain")
    x = b.add_input("x", (128 * trips, 256), nk.float32)
    y = b.alloc((128 * trips, 256), nk.float32, "hbm", name="y")
    t = b.alloc((128, 256))
    b.dma_copy(t, x[0:128, :])

    def body(i):
        u = b.alloc((128, 256))
        b.dma_copy(u, x[ts(i, 128), :])
        b.tensor_scalar(t, t, "multiply", 2.0)
        b.tensor_tensor(u, u, t, "multiply")
        b.activation(u, "exp", u)
        b.dma_copy(y[ts(i, 128), :], u)
        b.dealloc(u)

    if unrolled:
        for i in range(trips):
            body(i)
    else:
        with b.fori_loop(0, trips) as i:
            body(i)
    b.dealloc(t)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize("trips", [1, 2, 5])
def test_a_loop_costs_the_same_as_its_unrolled_body(trips):
    looped, unrolled = estimate(_loop_chain(trips, False)), estimate(_loop_chain(trips, True))
    for name in ("lower_bound_ns", "serial_ns", "dependency_ns", "dma_transfer_ns", "roofline_ns"):
        assert getattr(looped, name) == pytest.approx(getattr(unrolled, name), rel=1e-12), name
    assert looped.by_engine_ns == pytest.approx(unrolled.by_engine_ns, rel=1e-12)
    assert looped.instructions == unrolled.instructions == 1 + 5 * trips


@pytest.mark.parametrize("trips", [1, 4])
def test_first_iteration_and_steady_state_dependencies_differ(trips):
    # t *= 2 waits on the DMA in iteration 1 (268) and on VectorE itself later (100 cycles);
    # every iteration: u * t waits on the DMA of u (268, the larger of its two), the exp on
    # VectorE (161 + 268), the store on ScalarE (161)
    e = estimate(_loop_chain(trips, False))
    expected = 268 + (trips - 1) * 100 / 0.96 + trips * (268 + 161 + 268 + 161)
    assert e.dependency_ns == pytest.approx(expected, rel=1e-9)


def test_estimate_rejects_what_is_not_an_nki_kernel():
    with pytest.raises(BuildError, match="estimate takes an NKI kernel Graph, got str"):
        estimate("graph")
    tensor_graph = nk.Builder("t")
    x = tensor_graph.add_input("x", (4, 4), nk.float32)
    tensor_graph.set_outputs({"y": x})
    with pytest.raises(VerifyError, match="kernel inputs are HBM tensors"):
        estimate(tensor_graph.graph)


def test_an_op_without_a_cost_rule_is_named():
    loop = next(o for o in tile_add(256, 64).walk() if isinstance(o, ForiLoopOp))
    with pytest.raises(VerifyError, match="no cost rule for nki.fori_loop"):
        instruction_cost(loop, TRN2)


def test_summary_and_bound():
    e = estimate(copy_through(128, 4096))
    assert e.bound == "dma"
    text = e.summary()
    assert f"{e.scheduled_ns / 1e3:,.2f} us scheduled (critical: dma)" in text
    assert f"lower bound {e.lower_bound_ns / 1e3:,.2f} us (dma-bound)" in text
    assert f"ratio {e.ratio:.2f}" in text and "2 instructions" in text
