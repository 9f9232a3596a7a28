"""Hypothesis properties of the estimate: more iterations and bigger DMAs cost more; the
lower bound never exceeds the scheduled time, which never exceeds the serial time, and the lower
bound never beats the roofline (for kernels that
read every input and write every output once); random compiled graphs keep the invariants.

Roofline vs lower bound (and lower bound vs scheduled) is compared with a 1e-9 relative slack:
a kernel at exactly peak sums the same time two ways (cycles / clock vs FLOPs / peak) with
different float rounding.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.perf import estimate
from nkigen_lite.perf.costmodel import ENGINES
from nkigen_lite.testing.strategies import tensor_graphs

from .kernels import copy_through, gemm, tile_add

dtypes = st.sampled_from([nk.float32, nk.bfloat16])


def _invariants(e, exact_io: bool) -> None:
    assert set(e.by_engine_ns) == set(ENGINES)
    assert all(v >= 0 for v in e.by_engine_ns.values())
    assert e.lower_bound_ns == max(e.by_engine_ns.values())
    assert e.lower_bound_ns <= e.scheduled_ns * (1 + 1e-9)
    assert e.scheduled_ns <= e.serial_ns * (1 + 1e-9)
    assert e.critical_engine in e.by_resource_ns
    assert e.roofline_ns == max(e.compute_roofline_ns, e.memory_roofline_ns)
    if exact_io:
        assert e.roofline_ns <= e.lower_bound_ns * (1 + 1e-9)
        assert e.ratio >= 1 - 1e-9


@given(trips=st.integers(1, 6), cols=st.integers(1, 2048), dtype=dtypes)
def test_more_iterations_take_more_time(trips, cols, dtype):
    a, b = estimate(tile_add(128 * trips, cols, dtype)), estimate(tile_add(128 * (trips + 1), cols, dtype))
    assert b.lower_bound_ns > a.lower_bound_ns
    assert b.scheduled_ns > a.scheduled_ns
    assert b.serial_ns > a.serial_ns
    _invariants(a, True)


@given(p=st.integers(1, 128), cols=st.integers(1, 4096), extra=st.integers(1, 512), dtype=dtypes)
def test_bigger_dmas_take_more_time(p, cols, extra, dtype):
    a, b = estimate(copy_through(p, cols, dtype)), estimate(copy_through(p, cols + extra, dtype))
    assert b.dma_transfer_ns > a.dma_transfer_ns
    assert b.serial_ns > a.serial_ns
    assert b.lower_bound_ns >= a.lower_bound_ns
    _invariants(a, True)


@given(mt=st.integers(1, 3), kt=st.integers(1, 4), nt=st.integers(1, 2), dtype=dtypes)
def test_gemm_invariants_and_more_k_costs_more(mt, kt, nt, dtype):
    a = estimate(gemm(128 * mt, 128 * kt, 512 * nt, dtype))
    b = estimate(gemm(128 * mt, 128 * (kt + 1), 512 * nt, dtype))
    _invariants(a, True)
    assert b.by_engine_ns["tensor"] > a.by_engine_ns["tensor"]
    assert b.flops > a.flops


@settings(max_examples=15)
@given(st.data())
def test_random_compiled_graphs_keep_the_invariants(data):
    g = data.draw(tensor_graphs(max_ops=5, dtypes=(nk.float32, nk.bfloat16), max_rank=3, max_dim=9))
    k = nk.compile(g)
    e = k.estimate()
    _invariants(e, False)
    assert e.instructions == k.stats().instructions_dynamic
