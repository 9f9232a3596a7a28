"""A count of the structural edits of every IR graph in the process: ops linked into or
unlinked from a block, operands replaced, block arguments added, attributes replaced. A fact
computed from a graph (e.g. ``nki.verify``'s result, cached on the graph) stays true while the
count is unchanged; any edit of any graph makes it be computed again."""

from __future__ import annotations


class _Edits:
    __slots__ = ("n",)

    def __init__(self):
        self.n = 0


EDITS = _Edits()


def edited() -> None:
    """Count one edit (for code that edits an op outside ``Block`` and ``Op`` methods)."""
    EDITS.n += 1
