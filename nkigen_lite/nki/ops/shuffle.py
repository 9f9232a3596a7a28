"""The Vector engine's cross-partition shuffle, ``nki.stream_shuffle``.

``nki.stream_shuffle dst, src {mask}``: within each quadrant of 32 partitions, partition ``i`` of
``dst`` receives partition ``mask[i]`` of ``src`` (the same quadrant of src, the same free
elements), bit for bit: data movement, no arithmetic. ``mask`` holds 32 indices 0..31, applied to
every quadrant the access covers.

NKI 0.6: ``nisa.nc_stream_shuffle(dst, src, shuffle_mask)`` (page
``nki.isa.nc_stream_shuffle.html``; docs/nki_rules.md gives the operand rules the verifier
enforces; the mask value 255, "leave that partition unmodified", is not taken: stricter).
"""

from __future__ import annotations

from ...ir.attrs import INT_TUPLE, Attr
from ..access import ACCESS
from .base import ENGINE_ATTR
from .compute import ComputeOp


class StreamShuffleOp(ComputeOp):
    """``nki.stream_shuffle dst, src {mask}``: dst[32q + i] = src[32q + mask[i]] per quadrant q."""

    name = "nki.stream_shuffle"
    attr_spec = (Attr("dst", ACCESS), Attr("src", ACCESS), Attr("mask", INT_TUPLE), ENGINE_ATTR)
    writes = ("dst",)
    engines = ("vector",)


SHUFFLE_OPS = (StreamShuffleOp,)
