"""Fewer cyclic garbage collections while the compiler runs.

A compile allocates hundreds of thousands of small, long-lived objects (ops, accesses, affine
offsets, schedules) and frees few of them. With CPython's default first-generation threshold
(700 allocations) the collector walks the growing heap over and over: at the Qwen3-0.6B layer
at seq 2048 that was about a fifth of the compile's CPU time. ``fewer_collections`` raises the
first-generation threshold while any compile runs (nested or in several threads: the first to
enter raises it, the last to leave restores the thresholds it found); reference counting frees
acyclic garbage as before, so only cyclic garbage waits longer. Nothing the compiler computes
depends on it.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

YOUNG_THRESHOLD = 200_000  # allocations between first-generation collections while compiling

_lock = threading.Lock()
_active = 0  # compiles running now
_saved: tuple | None = None  # the thresholds before the first of them


@contextmanager
def fewer_collections():
    """Run the block with the first-generation threshold at least ``YOUNG_THRESHOLD`` (left
    alone when the caller set it to 0: automatic collection off)."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            if _saved[0] != 0:
                gc.set_threshold(max(_saved[0], YOUNG_THRESHOLD), *_saved[1:])
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                gc.set_threshold(*_saved)
