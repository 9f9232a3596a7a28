"""Kernel Builder rules of the batch-norm statistics instructions (nki/ops/bn.py). No public
Kernel Builder reference documents them: the names and keywords follow ``nki.isa`` (kb_table.py
marks them assumed), checked only against the recording stand-in (tests/emit/kb_standin.py)."""

from __future__ import annotations

from ..nki import ops as K
from . import kb_table as T
from .kb_rules import rule


@rule(K.BnStatsOp)
def _bn_stats(w, op) -> None:
    w.isa_call(T.BN_STATS, dst=w.access(op, "dst"), data=w.access(op, "data"))


@rule(K.BnAggrOp)
def _bn_aggr(w, op) -> None:
    w.isa_call(T.BN_AGGR, dst=w.access(op, "dst"), data=w.access(op, "data"))
