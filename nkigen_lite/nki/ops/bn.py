"""Batch-normalisation statistics instructions of the Vector engine: ``bn_stats`` / ``bn_aggr``.

``nki.bn_stats dst, data``: per partition, over ``data``'s flattened free elements (at most 512),
six fp32 statistics into ``dst`` ([P, 6]): the count, mean and variance * count (the sum of
squared deviations from that mean) of the even-indexed elements, then the same three of the
odd-indexed elements.

``nki.bn_aggr dst, data``: ``data`` holds one or more such (count, mean, variance * count)
triples per partition (bn_stats outputs side by side); ``dst`` ([P, 2]) gets the mean and the
(population) variance of all the elements they describe.

NKI 0.6: ``nisa.bn_stats(dst, data)``, ``nisa.bn_aggr(dst, data)`` (pages
``nki.isa.bn_stats.html`` / ``nki.isa.bn_aggr.html``; docs/nki_rules.md gives the operand rules
the verifier enforces).
"""

from __future__ import annotations

from ...ir.attrs import Attr
from ..access import ACCESS
from .base import ENGINE_ATTR
from .compute import ComputeOp


class BnStatsOp(ComputeOp):
    """``nki.bn_stats dst, data``: count, mean and variance * count of the even and of the odd
    elements of each partition (six fp32 values per partition)."""

    name = "nki.bn_stats"
    attr_spec = (Attr("dst", ACCESS), Attr("data", ACCESS), ENGINE_ATTR)
    writes = ("dst",)
    engines = ("vector",)


class BnAggrOp(ComputeOp):
    """``nki.bn_aggr dst, data``: the mean and variance per partition of the elements that the
    (count, mean, variance * count) triples of ``data`` describe."""

    name = "nki.bn_aggr"
    attr_spec = (Attr("dst", ACCESS), Attr("data", ACCESS), ENGINE_ATTR)
    writes = ("dst",)
    engines = ("vector",)


BN_OPS = (BnStatsOp, BnAggrOp)
