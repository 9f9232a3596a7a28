"""The session's shared Qwen3 layer kernels (tests/lower/qwen3_kernels.py): compiled once, the
same text as a fresh compile, and a change to one is reported (tests/lower/conftest.py fails
the session on it)."""

from __future__ import annotations

import nkigen_lite as nk
from nkigen_lite.workloads.registry import get_workload

from . import qwen3_kernels
from .qwen3_kernels import model_targets, qwen3_layer_kernel


def test_cached_kernel_is_compiled_once_and_equals_a_fresh_compile():
    k = qwen3_layer_kernel(128)
    assert qwen3_layer_kernel(128) is k
    assert str(k.nki) == str(nk.compile(model_targets._qwen(128)).nki)
    assert ("default", 128) in qwen3_kernels.fingerprints


def test_a_changed_kernel_is_reported():
    kern = nk.compile(get_workload("softmax").graph(shape=(128, 64)))
    key = ("test", "softmax")
    qwen3_kernels._keep(key, kern)
    try:
        assert key not in qwen3_kernels.changed()
        top = list(kern.nki.body)
        kern.nki.body.remove(top[0])
        kern.nki.body.append(top[0])
        assert key in qwen3_kernels.changed()
    finally:
        del qwen3_kernels.fingerprints[key]
