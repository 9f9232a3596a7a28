"""The Qwen3-0.6B layer of benchmarks/model_targets.py compiled once per sequence length for the
whole test session: several test files check different facts (what the front keeps, O on chip,
the MLP intermediate, traffic) of the same kernel, which takes up to ~15 s to compile at seq
2048. Callers only read the kernel."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import nkigen_lite as nk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import model_targets  # noqa: E402


@functools.lru_cache(maxsize=4)
def qwen3_layer_kernel(seq: int) -> nk.Kernel:
    """``nk.compile`` of ``model_targets._qwen(seq)`` (default compiler settings), cached."""
    return nk.compile(model_targets._qwen(seq))
