"""Session checks for tests/lower: the shared compiled kernels of qwen3_kernels.py were only
read."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _shared_kernels_unchanged():
    yield
    from . import qwen3_kernels

    bad = qwen3_kernels.changed()
    assert not bad, f"a test changed the shared compiled kernels {bad} (tests/lower/qwen3_kernels.py)"
