"""Top-8 instructions of the Vector engine: the max8 / find_index8 / match_replace8 idiom.

``nki.max8 dst, src``: per partition, the 8 largest of ``src``'s elements (read as fp32), in
descending order, into ``dst`` ([P, 8]). ``nki.find_index8 dst, data, vals``: per partition,
the index (from 0, over ``data``'s flattened free elements) of the first element equal to each
of the 8 ``vals``; a value repeated in ``vals`` takes successive matches in ascending position
order; a value not present gives the all-ones sentinel of ``dst``'s dtype (uint16 / uint32).
``nki.match_replace8 dst, data, vals {imm}``: ``dst`` is ``data`` with the first occurrence of
each of the 8 ``vals`` replaced by the fp32 immediate ``imm`` (a value repeated k times in
``vals`` replaces its first k occurrences).

NKI 0.6: ``nisa.max8``, ``nisa.nc_find_index8``, ``nisa.nc_match_replace8`` (pages
``nki.isa.<name>.html``; docs/nki_rules.md gives the operand rules the verifier enforces).
"""

from __future__ import annotations

from ...ir.attrs import FLOAT, Attr
from ..access import ACCESS
from .base import ENGINE_ATTR
from .compute import ComputeOp


class Max8Op(ComputeOp):
    """``nki.max8 dst, src``: the 8 largest values per partition, descending (fp32 compare)."""

    name = "nki.max8"
    attr_spec = (Attr("dst", ACCESS), Attr("src", ACCESS), ENGINE_ATTR)
    writes = ("dst",)
    engines = ("vector",)


class FindIndex8Op(ComputeOp):
    """``nki.find_index8 dst, data, vals``: per partition, the first index of each of 8 values."""

    name = "nki.find_index8"
    attr_spec = (Attr("dst", ACCESS), Attr("data", ACCESS), Attr("vals", ACCESS), ENGINE_ATTR)
    writes = ("dst",)
    engines = ("vector",)


class MatchReplace8Op(ComputeOp):
    """``nki.match_replace8 dst, data, vals {imm}``: data with the first occurrence of each of
    the 8 values replaced by ``imm``."""

    name = "nki.match_replace8"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("data", ACCESS),
        Attr("vals", ACCESS),
        Attr("imm", FLOAT),
        ENGINE_ATTR,
    )
    writes = ("dst",)
    engines = ("vector",)


TOP8_OPS = (Max8Op, FindIndex8Op, MatchReplace8Op)
