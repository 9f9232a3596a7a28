"""Built-in workloads compiled once per distinct graph for the whole test session: several
files compile the same default workloads (estimate invariants, ISA signatures, kernel
language, Kernel Builder surface, deallocations), and a workload whose default dtype is
bf16 gives the same graph for ``dtype=bf16``. Callers only read the kernel: ``changed()``
lists the kernels whose IR text is no longer what the compile gave, and tests/conftest.py
fails the session on any."""

from __future__ import annotations

import hashlib

import nkigen_lite as nk
from nkigen_lite.workloads.registry import get_workload

_KERNELS: dict[str, tuple[nk.Kernel, str]] = {}  # sha256 of the graph's text -> (kernel, of its IR)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def graph_kernel(g: nk.Graph) -> nk.Kernel:
    """``nk.compile(g)`` with the default compiler settings, compiled once per graph text
    (never for a test that changes the compiler, e.g. with monkeypatch)."""
    key = _hash(str(g))
    if key not in _KERNELS:
        k = nk.compile(g)
        _KERNELS[key] = (k, _hash(str(k.nki)))
    return _KERNELS[key][0]


def workload_kernel(name: str, **opts) -> nk.Kernel:
    """``nk.compile(get_workload(name).graph(**opts))``, compiled once per graph text."""
    return graph_kernel(get_workload(name).graph(**opts))


def changed() -> list[str]:
    """Names of the shared kernels whose IR text changed since their compile."""
    return [k.name for k, h in _KERNELS.values() if _hash(str(k.nki)) != h]
