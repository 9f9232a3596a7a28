"""NKI-source rules of the batch-norm statistics instructions (nki/ops/bn.py): ``nisa.bn_stats``
and ``nisa.bn_aggr`` (NKI 0.6 signatures ``bn_stats(dst, data, name=None)``,
``bn_aggr(dst, data, name=None)``)."""

from __future__ import annotations

from ..nki import ops as K
from .source_rules import rule


@rule(K.BnStatsOp, "nisa.bn_stats")
def _bn_stats(e, op) -> None:
    e.call("nisa.bn_stats", [("dst", e.access(op, "dst")), ("data", e.access(op, "data"))])


@rule(K.BnAggrOp, "nisa.bn_aggr")
def _bn_aggr(e, op) -> None:
    e.call("nisa.bn_aggr", [("dst", e.access(op, "dst")), ("data", e.access(op, "data"))])
