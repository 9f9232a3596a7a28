"""Fewer cyclic garbage collections while the compiler runs.

A compile allocates hundreds of thousands of small, long-lived objects (ops, accesses, affine
offsets, schedules) and frees few of them. With CPython's default first-generation threshold
(700 allocations) the collector walks the growing heap over and over: at the Qwen3-0.6B layer
at seq 2048 that was about a fifth of the compile's CPU time. ``fewer_collections`` raises the
first-generation threshold for the duration of a ``with`` block and restores the caller's
thresholds after it (nesting is fine); reference counting frees acyclic garbage as before, so
only cyclic garbage waits longer. Nothing the compiler computes depends on it.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

YOUNG_THRESHOLD = 200_000  # allocations between first-generation collections while compiling


@contextmanager
def fewer_collections():
    """Run the block with the first-generation threshold at ``YOUNG_THRESHOLD`` (never lower
    than the caller's)."""
    old = gc.get_threshold()
    if old[0] != 0:  # 0: the caller disabled automatic collection; leave it so
        gc.set_threshold(max(old[0], YOUNG_THRESHOLD), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
