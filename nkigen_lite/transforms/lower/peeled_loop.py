"""Blocks of a row range as a loop with the remainder peeled: the full blocks run in one
``fori_loop`` (or once, unrolled, when there is just one) and a shorter last block follows."""

from __future__ import annotations

from ...nki.types import Affine


def peeled_blocks(b, total: int, step: int, body) -> None:
    """``body(start, size)`` over [0, total) in blocks of ``step``: ``start`` is an int for a
    block emitted once and an Affine of the loop variable inside the loop."""
    full, rem = divmod(total, step)
    if full == 1:
        body(0, step)
    elif full > 1:
        with b.fori_loop(0, full) as i:
            body(Affine.of(i) * step, step)
    if rem:
        body(full * step, rem)
