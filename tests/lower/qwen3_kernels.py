"""The Qwen3-0.6B layer of benchmarks/model_targets.py compiled once per sequence length (and
once more without load_hoist's moves) for the whole test session: several test files check
different facts (what the front keeps, O on chip, the MLP intermediate, traffic, where loads
go) of the same kernel, which takes up to ~15 s to compile at seq 2048. Callers only read the
kernel: ``fingerprints`` keeps the IR text's hash of each kernel handed out and
tests/lower/conftest.py checks at the end of the session that none changed."""

from __future__ import annotations

import functools
import hashlib
import sys
from pathlib import Path

import pytest

import nkigen_lite as nk
from nkigen_lite.transforms.lower import deallocs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import model_targets  # noqa: E402

fingerprints: dict[tuple, tuple[nk.Kernel, str]] = {}  # cache key -> (kernel, sha256 of its IR)


def ir_hash(kern: nk.Kernel) -> str:
    return hashlib.sha256(str(kern.nki).encode()).hexdigest()


def _keep(key: tuple, kern: nk.Kernel) -> nk.Kernel:
    fingerprints[key] = (kern, ir_hash(kern))
    return kern


@functools.lru_cache(maxsize=4)
def qwen3_layer_kernel(seq: int) -> nk.Kernel:
    """``nk.compile`` of ``model_targets._qwen(seq)`` (default compiler settings), cached."""
    return _keep(("default", seq), nk.compile(model_targets._qwen(seq)))


@functools.lru_cache(maxsize=2)
def qwen3_layer_kernel_unhoisted(seq: int) -> nk.Kernel:
    """The same compile with load_hoist's moves off (``deallocs.hoist_loads`` returning 0),
    cached: the kernel load_hoist.py's tests compare against."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(deallocs, "hoist_loads", lambda *a: 0)
        return _keep(("unhoisted", seq), nk.compile(model_targets._qwen(seq)))


def changed() -> list[tuple]:
    """Keys of the kernels handed out whose IR text is no longer what the compile gave."""
    return [key for key, (kern, h) in fingerprints.items() if ir_hash(kern) != h]
