"""K-major matmul operands held as several SBUF tiles, each for a range of K chunks.

The scheduler tracks dependencies per allocation, and so does the NKI compiler's
synchronisation: a matmul reading chunk c of a tile waits for every write to that tile. Aᵀ
staged in groups (one per PSUM bank of transposes) and resident B loaded in groups (one DMA
each) therefore let the first matmuls of an M tile start when their group is ready instead of
when the whole operand is. The K loop runs over *segments*, the chunk ranges within which
every operand is one tile, with one ``fori_loop`` per segment.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...nki.types import Access, Affine, DimSlice

B_GROUP_CHUNKS = 8  # K chunks of resident B per tile (one DMA each): 128 x 8 rows


@dataclass(frozen=True)
class ChunkTiles:
    """An operand [p, nk, width] split into tiles: ``parts`` = ((tile, first chunk, end), ...).
    A tile of rank 4 stores the width as ``(width / s, s)`` (``alloc_sizes(split=s)``: the
    layout a DMA transpose writes, matmul_dma_transpose.py); its accesses split the columns."""

    parts: tuple

    @staticmethod
    def one(tile, nk: int) -> ChunkTiles:
        return ChunkTiles(((tile, 0, nk),))

    @staticmethod
    def alloc(b, p: int, nk: int, width: int, dt, name: str, group: int, split: int = 0) -> ChunkTiles:
        """Tiles of ``group`` chunks each (the last may hold fewer)."""
        return ChunkTiles.alloc_sizes(b, p, nk, width, dt, name, [group] * -(-nk // group), split)

    @staticmethod
    def alloc_sizes(b, p: int, nk: int, width: int, dt, name: str, sizes, split: int = 0) -> ChunkTiles:
        """Tiles of ``sizes[i]`` chunks each, in order, up to ``nk`` chunks in all; ``split``
        (a divisor of ``width``) stores the width as ``(width / split, split)``."""
        parts = []
        c0 = 0
        cols = (width // split, split) if split else (width,)
        for size in sizes:
            if c0 >= nk:
                break
            c1 = min(nk, c0 + size)
            parts.append((b.alloc((p, c1 - c0) + cols, dt, "sbuf", name=name), c0, c1))
            c0 = c1
        return ChunkTiles(tuple(parts))

    def bounds(self) -> set[int]:
        return {c for _, c0, c1 in self.parts for c in (c0, c1)}

    def part(self, c: int):
        """(tile, its first chunk) of the part holding chunk ``c`` (a static index)."""
        for t, c0, c1 in self.parts:
            if c0 <= c < c1:
                return t, c0
        raise AssertionError(f"lowering bug: chunk {c} outside {self.parts}")

    def access(self, c, seg_start: int, kt: int, cols: DimSlice) -> Access:
        """[kt, cols] of chunk ``c`` (static or a loop index) in the segment starting at
        ``seg_start``."""
        t, c0 = self.part(seg_start)
        col_dims = (cols,) if len(t.type.shape) == 3 else split_cols(cols, t.type.shape[-1])
        return Access(t, (DimSlice(Affine.of(0), kt, 1), DimSlice(Affine.of(c) + (-c0), 1, 1)) + col_dims)


@dataclass(frozen=True)
class ColumnWindow:
    """The columns from ``col0`` of a ChunkTiles operand (one lead M tile's Aᵀ in a tile
    loaded for several): the same ``bounds`` and ``access`` with the columns shifted."""

    chunks: ChunkTiles
    col0: int

    def bounds(self) -> set[int]:
        return self.chunks.bounds()

    def access(self, c, seg_start: int, kt: int, cols: DimSlice) -> Access:
        return self.chunks.access(c, seg_start, kt, DimSlice(cols.offset + self.col0, cols.size, cols.stride))


def segments(nk: int, full: int, operands) -> list[tuple[int, int]]:
    """Chunk ranges [s0, s1) covering [0, nk) within which every operand is one tile; the
    partial chunk (``full`` < nk) is a segment of its own."""
    cuts = {0, nk, full}
    for op in operands:
        if op is not None:
            cuts |= op.bounds()
    pts = sorted(c for c in cuts if 0 <= c <= nk)
    return [(a, b) for a, b in zip(pts, pts[1:]) if b > a]


def run_k_segments(b, nk: int, full: int, operands, step) -> None:
    """``step(c, seg_start, first)`` for every K chunk: chunk 0 peeled (``first``), each
    segment's remaining chunks in one ``fori_loop`` (a single one static)."""
    first = True
    for s0, s1 in segments(nk, full, operands):
        c = s0
        if first:
            step(c, s0, True)
            first = False
            c += 1
        if s1 - c == 1:
            step(c, s0, False)
        elif s1 - c > 1:
            with b.fori_loop(c, s1) as i:
                step(i, s0, False)


def div_affine(x, d: int) -> Affine:
    """``x / d`` for an int or loop-index expression all of whose parts are multiples of ``d``."""
    a = Affine.of(x)
    if a.const % d or any(c % d for _, c in a.terms):
        raise AssertionError(f"lowering bug: offset {a} is not a multiple of {d}")
    return Affine(a.const // d, tuple((v, c // d) for v, c in a.terms))


def split_cols(cols: DimSlice, split: int) -> tuple[DimSlice, DimSlice]:
    """The columns ``cols`` (unit stride, offset and size multiples of ``split``) of a width
    stored as ``(width / split, split)``: the two DimSlices addressing them."""
    if cols.stride != 1 or cols.size % split:
        raise AssertionError(f"lowering bug: columns {cols} do not split by {split}")
    return DimSlice(div_affine(cols.offset, split), cols.size // split, 1), DimSlice(Affine.of(0), split, 1)
