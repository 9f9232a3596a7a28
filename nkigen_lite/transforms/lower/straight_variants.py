"""Rewrites of a straight-line kernel tried against its finished schedule: each rewrite (a
*move*: ``move(block, target) -> bool``, False when it does not apply) is kept only when the
kernel, finished by the rest of the ``deallocs`` pass (tail split, list order, engine balance),
is scheduled shorter with it.

Every subset of the moves that apply is tried, in the given order, on a clone of the graph;
the shortest wins (ties: fewer moves, then the earlier subset; a subset whose kernel fails the
verifier, e.g. a tile kept live longer no longer fitting SBUF, is skipped; only a trial that would
be chosen is verified), and is then applied to the graph
itself before it is finished (the same deterministic steps, so the same result). Only for
kernels of at most ``MAX_INSTRUCTIONS`` instructions that ``straight_order._qualifies``: each
subset costs one more finish. The moves: ``lead_load.py`` (the first row tile loaded ahead of
the weight rows) and ``scale_last.py`` (a row scale applied after the column weight). Then other
ways to finish (the store-first list orders, straight_order.py) are tried on the best subset
only, and the shortest finish is kept.
"""

from __future__ import annotations

from itertools import combinations

from ...ir.errors import VerifyError
from ...nki.verify import verify
from .straight_order import _qualifies

MAX_INSTRUCTIONS = 400  # straight-line kernels this small are finished once per subset


def best_variant(graph, target, moves: list, finish, makespan, alternatives: tuple = ()) -> tuple:
    """Apply the best subset of ``moves`` (module docstring) and ``finish(graph)``; returns the
    indices of the moves applied. ``alternatives``: other finishing functions, tried on the best
    subset once it is chosen; the shortest finish is applied (ties: ``finish``, then the earlier
    alternative)."""
    n = sum(1 for _ in graph.body)
    if n > MAX_INSTRUCTIONS or not _qualifies(graph):
        finish(graph)
        return ()
    usable = [k for k, m in enumerate(moves) if m(graph.clone().body, target)]
    best = (None, ()) if not usable else None
    for r in range(len(usable) + 1 if usable else 0):
        for subset in combinations(usable, r):
            trial = graph.clone()
            if not all(moves[k](trial.body, target) for k in subset):
                continue
            finish(trial)
            t = makespan(trial)
            if best is None or t < best[0] - 1e-6:
                if subset and not _legal(trial, target):  # checked only when it would win
                    continue
                best = (t, subset)
    chosen = best[1]
    done = best[0]
    if alternatives and done is None:
        trial = graph.clone()
        finish(trial)
        done = makespan(trial)
    pick = finish
    for alt in alternatives:
        trial = graph.clone()
        if not all(moves[k](trial.body, target) for k in chosen):
            continue
        alt(trial)
        t = makespan(trial)
        if t < done - 1e-6 and _legal(trial, target):
            done, pick = t, alt
    for k in chosen:
        moves[k](graph.body, target)
    pick(graph)
    return chosen


def _legal(trial, target) -> bool:
    """Whether a trial kernel passes the verifier (e.g. a tile kept live longer must still fit
    SBUF); asked only of a trial that would be chosen, so that a skipped one costs no check."""
    try:
        verify(trial, target)
    except VerifyError:
        return False
    return True
