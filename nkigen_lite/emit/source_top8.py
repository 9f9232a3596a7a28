"""NKI-source rules of the top-8 instructions (nki/ops/top8.py): ``nisa.max8``,
``nisa.nc_find_index8`` and ``nisa.nc_match_replace8`` (NKI 0.6 signatures)."""

from __future__ import annotations

from ..nki import ops as K
from .nki_source import scalar
from .source_rules import rule


@rule(K.Max8Op, "nisa.max8")
def _max8(e, op) -> None:
    e.call("nisa.max8", [("dst", e.access(op, "dst")), ("src", e.access(op, "src"))])


@rule(K.FindIndex8Op, "nisa.nc_find_index8")
def _find_index8(e, op) -> None:
    e.call(
        "nisa.nc_find_index8",
        [("dst", e.access(op, "dst")), ("data", e.access(op, "data")), ("vals", e.access(op, "vals"))],
    )


@rule(K.MatchReplace8Op, "nisa.nc_match_replace8")
def _match_replace8(e, op) -> None:
    e.call(
        "nisa.nc_match_replace8",
        [
            ("dst", e.access(op, "dst")),
            ("data", e.access(op, "data")),
            ("vals", e.access(op, "vals")),
            ("imm", scalar(float(op.attrs["imm"]))),
        ],
    )
