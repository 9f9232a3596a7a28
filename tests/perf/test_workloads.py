"""``nk.compile(workload).estimate()`` for every registered workload: the estimate agrees with
the kernel's stats (instruction count, DMA bytes, minimum HBM bytes at 360 GB/s) and keeps the
invariants serial >= scheduled >= lower bound >= roofline (compiled workloads read every input and write every
output, so the roofline is a lower bound; 1e-9 relative slack for float rounding)."""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite.perf.costmodel import ENGINES, Estimate
from nkigen_lite.workloads.registry import WORKLOADS, get_workload

from ..workload_kernels import workload_kernel

get_workload("softmax")  # loads the registry
NAMES = sorted(WORKLOADS)
DTYPED = [n for n in NAMES if "dtype" in WORKLOADS[n].build.__code__.co_varnames]


def _check(k) -> Estimate:
    e = k.estimate()
    s = k.stats()
    assert isinstance(e, Estimate)
    assert set(e.by_engine_ns) == set(ENGINES)
    assert e.instructions == s.instructions_dynamic
    assert e.dma_bytes >= s.dma_bytes  # equal unless a DMA casts to a narrower dtype
    assert e.min_hbm_bytes == s.min_hbm_bytes
    assert e.memory_roofline_ns == pytest.approx(s.min_hbm_bytes / 360, rel=1e-9)
    assert e.roofline_ns <= e.lower_bound_ns * (1 + 1e-9)
    assert e.lower_bound_ns <= e.scheduled_ns * (1 + 1e-9) <= e.serial_ns * (1 + 1e-9)
    assert e.ratio == pytest.approx(e.scheduled_ns / e.roofline_ns, rel=1e-12)
    assert e.bound in ENGINES and e.by_engine_ns[e.bound] == e.lower_bound_ns
    return e


def test_the_workload_list_is_complete():
    assert {
        "softmax",
        "rmsnorm",
        "layernorm",
        "gelu_tanh",
        "clamped_swiglu",
        "attention",
        "rope",
        "swiglu_mlp",
        "matmul",
    } <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_workload_estimate(name):
    _check(workload_kernel(name))


@pytest.mark.parametrize("name", DTYPED)
def test_bf16_workload_estimate(name):
    _check(workload_kernel(name, dtype=nk.bfloat16))


def test_matmul_workload_is_near_its_roofline():
    # 128 x 1024 x 6144 fp32: compute-bound at the fp32 peak; the lowering reaches it within 25 %
    # when engines overlap perfectly (its loops are single-buffered, so the schedule is longer)
    e = _check(nk.compile(get_workload("matmul").graph(m=128, k=1024, n=6144)))
    assert e.compute_roofline_ns == pytest.approx(2 * 128 * 1024 * 6144 / 19.66e3, rel=1e-3)
    assert e.lower_bound_ratio < 1.25
