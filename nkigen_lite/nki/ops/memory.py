"""Memory ops: allocation, deallocation, HBM views and DMA."""

from __future__ import annotations

from ...ir.attrs import INT, INT_TUPLE, Attr
from ...ir.errors import BuildError
from ...ir.op import Op
from ...ir.traits import ExplicitResultTypes, Pure, SideEffect
from ..access import ACCESS
from ..types import HbmType, TileType
from .base import NkiOp

MAX_ROTATING_BUFFERS = 4  # a model limit: deeper rotation buys no overlap a 2-3 deep one lacks


class AllocOp(Op):
    """``%t = nki.alloc {bufs = 2} : tile<128x512xf32, sbuf>``: fresh, uninitialised memory
    (HBM, SBUF or PSUM). ``bufs`` (default 1) is the number of rotating buffers of a tile
    allocated in a loop body: iteration i of the enclosing loop uses buffer ``i mod bufs``, so
    the next iteration's DMA into the tile may overlap this iteration's readers. Each execution
    still yields unwritten memory; the tile occupies ``bufs`` times its bytes (PSUM: banks)."""

    name = "nki.alloc"
    traits = frozenset({SideEffect, ExplicitResultTypes})
    attr_spec = (Attr("bufs", INT, 1),)

    def verify(self) -> None:
        if self.operands or len(self.results) != 1:
            raise BuildError("nki.alloc takes no operands and has one result")
        t = self.results[0].type
        if not isinstance(t, (TileType, HbmType)):
            raise BuildError(f"nki.alloc result must be a tile or hbm tensor, got {t}")
        bufs = self.attrs["bufs"]
        if not 1 <= bufs <= MAX_ROTATING_BUFFERS:
            raise BuildError(f"nki.alloc bufs = {bufs}: rotating buffers must be 1..{MAX_ROTATING_BUFFERS}")
        if bufs > 1 and isinstance(t, HbmType):
            raise BuildError(f"nki.alloc bufs = {bufs}: only on-chip tiles rotate, not hbm tensors")

    @property
    def bufs(self) -> int:
        return self.attrs["bufs"]


class DeallocOp(Op):
    """``nki.dealloc %t``: ends the lifetime of an on-chip tile."""

    name = "nki.dealloc"
    traits = frozenset({SideEffect})

    @classmethod
    def infer(cls, operand_types, _attrs):
        if len(operand_types) != 1 or not isinstance(operand_types[0], TileType):
            raise BuildError("nki.dealloc takes one on-chip tile")
        return []


class HbmViewOp(Op):
    """``%v = nki.hbm_view %x {offset, strides} : hbm<...>``: a strided view of an HBM tensor's
    flat storage (reshape, transpose, broadcast with stride 0, slice) without a copy."""

    name = "nki.hbm_view"
    traits = frozenset({Pure, ExplicitResultTypes})
    attr_spec = (Attr("offset", INT, 0), Attr("strides", INT_TUPLE))

    def verify(self) -> None:
        if len(self.operands) != 1 or not isinstance(self.operand(0).type, HbmType):
            raise BuildError("nki.hbm_view takes one hbm tensor")
        if len(self.results) != 1 or not isinstance(self.results[0].type, HbmType):
            raise BuildError("nki.hbm_view produces one hbm tensor")
        src, out = self.operand(0).type, self.results[0].type
        if out.dtype is not src.dtype:
            raise BuildError(f"nki.hbm_view keeps the dtype: {src.dtype} -> {out.dtype}")
        strides = self.attrs["strides"]
        if len(strides) != out.rank:
            raise BuildError(f"nki.hbm_view has {len(strides)} strides for a rank-{out.rank} view")
        if self.attrs["offset"] < 0 or any(s < 0 for s in strides):
            raise BuildError("nki.hbm_view offset and strides must be non-negative")

    def extent(self) -> int:
        """One past the largest flat element index the view touches."""
        out = self.results[0].type
        return self.attrs["offset"] + sum((n - 1) * s for n, s in zip(out.shape, self.attrs["strides"])) + 1


class DmaCopyOp(NkiOp):
    """``nki.dma_copy dst, src``: a DMA between HBM windows and SBUF tiles (never PSUM); the
    elements of both accesses pair up in row-major order; differing dtypes cast via fp32."""

    name = "nki.dma_copy"
    attr_spec = (Attr("dst", ACCESS), Attr("src", ACCESS))
    writes = ("dst",)

    @property
    def moved(self):
        """The access whose elements the DMA moves (an indirect DMA's HBM side is the whole
        tensor it selects rows from: see ops/indirect.py)."""
        return self.access("dst")
