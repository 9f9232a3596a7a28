"""Simulated ranks: several kernel calls running at once, one thread each, meeting at collectives.

``run_ranks(calls)`` runs ``calls[r]()`` on thread r with rank context (r, world); the
``nki.collectives`` functions (collectives.py) call ``exchange`` to hand their source values to
the other ranks and receive everyone's, in rank order. The ranks must reach the same
collectives in the same order: a rank that calls another collective, or finishes while others
wait, stops every rank with one error naming both; a rank that raises stops the others too.
"""

from __future__ import annotations

import threading

from .errors import NkiSimError

_local = threading.local()


class Rendezvous:
    """Where ``world`` ranks swap values: round k completes when every rank has posted to it."""

    def __init__(self, world: int, timeout_s: float = 600.0):
        self.world, self.timeout_s = world, timeout_s
        self.cond = threading.Condition()
        self.round = 0
        self.posted: dict[int, tuple[str, object]] = {}
        self.results: dict[int, list] = {}
        self.finished: set[int] = set()
        self.error: str | None = None

    def _fail(self, msg: str) -> NkiSimError:
        if self.error is None:
            self.error = msg
        self.cond.notify_all()
        return NkiSimError(self.error)

    def exchange(self, rank: int, key: str, payload) -> list:
        """Post ``payload`` under ``key`` (what this rank is doing) and return every rank's
        payload of this round, in rank order."""
        with self.cond:
            if self.error is not None:
                raise NkiSimError(self.error)
            if self.finished:
                r = min(self.finished)
                raise self._fail(f"rank {rank} reached {key}, but rank {r} had finished its kernel")
            mine = self.round
            for r, (k, _) in self.posted.items():
                if k != key:
                    raise self._fail(f"rank {r} reached {k}, but rank {rank} reached {key}")
            self.posted[rank] = (key, payload)
            if len(self.posted) == self.world:
                self.results[mine] = [self.posted[r][1] for r in range(self.world)]
                self.results.pop(mine - 1, None)
                self.posted = {}
                self.round += 1
                self.cond.notify_all()
                return self.results[mine]
            while self.round == mine and self.error is None:
                if not self.cond.wait(self.timeout_s):
                    raise self._fail(f"rank {rank} waited {self.timeout_s:.0f} s at {key}: a rank never came")
            if self.error is not None:
                raise NkiSimError(self.error)
            return self.results[mine]

    def finish(self, rank: int) -> None:
        with self.cond:
            self.finished.add(rank)
            if self.posted:
                r, (k, _) = next(iter(self.posted.items()))
                raise self._fail(f"rank {r} reached {k}, but rank {rank} finished its kernel")

    def abort(self, msg: str) -> None:
        with self.cond:
            self._fail(msg)


def rank_context():
    """(rank, world, rendezvous) of the calling thread, or None outside run_ranks."""
    return getattr(_local, "ctx", None)


def run_ranks(calls: list) -> list:
    """Run ``calls[r]()`` for every rank r at once (one thread each); return their results in
    rank order, or raise the first rank's error (an error that stopped the others comes last)."""
    world = len(calls)
    rv = Rendezvous(world)
    results: list = [None] * world
    errors: list = [None] * world

    def body(r: int) -> None:
        _local.ctx = (r, world, rv)
        try:
            results[r] = calls[r]()
            rv.finish(r)
        except BaseException as e:  # handed to the caller below
            errors[r] = e
            rv.abort(f"rank {r} stopped: {e}")
        finally:
            _local.ctx = None

    threads = [threading.Thread(target=body, args=(r,), name=f"nki-sim-rank{r}") for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = [e for e in errors if e is not None and not str(e).startswith(rv.error or "\0")]
    first += [e for e in errors if e is not None]
    if first:
        raise first[0]
    return results
