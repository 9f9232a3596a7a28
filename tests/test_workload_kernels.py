"""The session's shared workload kernels (tests/workload_kernels.py): one compile per graph
text (a bf16-default workload asked for in bf16 is the same kernel), the same IR as a fresh
compile, and a changed kernel is reported."""

from __future__ import annotations

import nkigen_lite as nk
from nkigen_lite.workloads.registry import get_workload

from . import workload_kernels
from .workload_kernels import workload_kernel


def test_one_compile_per_graph():
    k = workload_kernel("qwen3_decode")
    assert workload_kernel("qwen3_decode") is k
    assert workload_kernel("qwen3_decode", dtype=nk.bfloat16) is k  # bf16 is its default
    assert workload_kernel("softmax", dtype=nk.bfloat16) is not workload_kernel("softmax")
    assert str(k.nki) == str(nk.compile(get_workload("qwen3_decode").graph()).nki)


def test_a_changed_kernel_is_reported():
    k = workload_kernel("softmax", shape=(128, 96))
    assert k.name not in workload_kernels.changed()
    key = next(key for key, (kern, _) in workload_kernels._KERNELS.items() if kern is k)
    top = list(k.nki.body)
    try:
        k.nki.body.remove(top[0])
        k.nki.body.append(top[0])
        assert k.name in workload_kernels.changed()
    finally:
        del workload_kernels._KERNELS[key]
