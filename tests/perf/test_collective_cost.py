"""The cost of collectives: ring algorithms at the Target's interconnect numbers (the formulas
written out here from the facts sheet's figures), the collective resource in the estimate, and
the per-rank counts in KernelStats; LNC=2 kernels are costed per core on a shared HBM stack."""

import pytest

import nkigen_lite as nk
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf import estimate, kernel_stats
from nkigen_lite.perf.instruction_cost import instruction_cost

LINK = 1.024e12 / 8  # NeuronLink-v3 per chip (intra-instance) over 8 physical cores, B/s
STEP = 1300.0  # assumed ring-step latency (the DMA first-byte latency), ns


def _kernel(kind, world, shape=(512, 256)):
    b = nk.nki.Builder("cc")
    x = b.add_input("x", shape, nk.float32)
    y_shape = {
        "all_reduce": shape,
        "all_gather": (shape[0] * world, shape[1]),
        "reduce_scatter": (shape[0] // world, shape[1]),
        "all_to_all": shape,
    }[kind]
    s = b.alloc(shape, nk.float32, "hbm", name="s")
    d = b.alloc(y_shape, nk.float32, "hbm", name="d")
    y = b.alloc(y_shape, nk.float32, "hbm", name="y")
    b.dma_copy(dst=s, src=x)
    getattr(b, kind)(d, s, world)
    b.dma_copy(dst=y, src=d)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize(
    ("kind", "steps", "chunk_div", "sent"),
    [
        ("all_reduce", lambda n: 2 * (n - 1), lambda n: n, lambda n, b: 2 * (n - 1) * b // n),
        ("all_gather", lambda n: n - 1, lambda n: 1, lambda n, b: (n - 1) * b),
        ("reduce_scatter", lambda n: n - 1, lambda n: n, lambda n, b: (n - 1) * b // n),
        ("all_to_all", lambda n: n - 1, lambda n: n, lambda n, b: (n - 1) * b // n),
    ],
)
def test_ring_cost_from_the_interconnect_numbers(kind, steps, chunk_div, sent, world):
    g = _kernel(kind, world)
    (op,) = [o for o in g.walk() if o.name == f"nki.{kind}"]
    src_bytes = 512 * 256 * 4
    c = instruction_cost(op, TRN2)
    want = steps(world) * (STEP + src_bytes // chunk_div(world) / LINK * 1e9)
    assert c.engine == "collective"
    assert c.ns == pytest.approx(want, rel=1e-12)
    s = kernel_stats(g)
    assert s.collective_count == 1
    assert s.collective_bytes == sent(world, src_bytes)
    e = estimate(g)
    assert e.by_engine_ns["collective"] == pytest.approx(want, rel=1e-12)
    assert e.scheduled_ns >= want  # the transfers before and after depend on it


def test_the_collective_waits_for_its_source_and_its_reader_waits_for_it():
    e = estimate(_kernel("all_reduce", 4))
    assert e.scheduled_ns > e.by_engine_ns["collective"] + 2 * TRN2.dma_first_byte_latency_ns


def test_lnc2_core_dma_rate_is_its_share_of_the_hbm_stack():
    from dataclasses import replace

    b = nk.Builder("copy")
    x = b.add_input("x", (2048, 4096), nk.float32)
    b.set_outputs({"y": x * 2.0})
    k1 = nk.compile(b.graph)
    k2 = nk.split_cores(k1, 2)
    # trn2: 2 cores x 360 GB/s (the per-core HBM rate) fit the 725 GB/s stack: half the bytes
    # per core at the one-core rate
    d1, d2 = k1.estimate().dma_transfer_ns, k2.estimate().dma_transfer_ns
    assert d2 == pytest.approx(d1 / 2, rel=1e-9)
    # a stack of 400 GB/s shared by 2 cores: 200 GB/s per core bounds each transfer
    slow = replace(TRN2, hbm_stack_bytes_per_s=400e9)
    d2_slow = estimate(k2.nki, slow).dma_transfer_ns
    assert d2_slow == pytest.approx(d2 * 360e9 / 200e9, rel=1e-9)
    assert estimate(k1.nki, slow).dma_transfer_ns == pytest.approx(d1, rel=1e-12)  # one core: no sharing
