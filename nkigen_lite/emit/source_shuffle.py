"""NKI-source rule of ``nki.stream_shuffle`` (nki/ops/shuffle.py): ``nisa.nc_stream_shuffle``
(NKI 0.6 signature: dst, src, shuffle_mask)."""

from __future__ import annotations

from ..nki import ops as K
from .source_rules import rule


@rule(K.StreamShuffleOp, "nisa.nc_stream_shuffle")
def _stream_shuffle(e, op) -> None:
    e.call(
        "nisa.nc_stream_shuffle",
        [
            ("dst", e.access(op, "dst")),
            ("src", e.access(op, "src")),
            ("shuffle_mask", repr(list(op.attrs["mask"]))),
        ],
    )
