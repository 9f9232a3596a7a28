"""Global lookup tables (op registry, interpreter rules, layout rules, trace tables) and a scratch
context in which they can be extended and are restored afterwards.

Every table that maps an op class or name to a fact about it is created by ``table()``, so that
``scratch_tables()`` can snapshot all of them: a test may define a toy op, register its rules,
run it, and leave the process exactly as it found it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_TABLES: list[dict] = []


def table() -> dict:
    """A new global lookup table that ``scratch_tables`` snapshots and restores."""
    t: dict = {}
    _TABLES.append(t)
    return t


@contextmanager
def scratch_tables() -> Iterator[None]:
    """Run a block in which every ``table()`` may be extended; all are restored on exit."""
    saved = [(t, dict(t)) for t in list(_TABLES)]
    n = len(_TABLES)
    try:
        yield
    finally:
        for t, old in saved:
            t.clear()
            t.update(old)
        del _TABLES[n:]
