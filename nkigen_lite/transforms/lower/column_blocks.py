"""Column blocks: a reduction over a non-last axis with the input loaded once, in blocks of all
the reduced rows (column_softmax.py, column_moments.py).

The input is seen as ``(B, N, D)``: ``N = 128·q`` the reduced axis, ``B`` the product of the
dims before it, ``D`` of those after it. A load holds ``bb`` batches and ``W`` columns of all
``N`` rows, partition ``p`` holding rows ``p·q ... p·q + q - 1`` (one DMA; runs of ``q·D``
contiguous elements when ``W = D``, else ``W``). A loop body unrolls ``kb x kj`` loads (batch
loads by column blocks) so that their work can be software-pipelined as one sequence.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from ...ir.value import Value
from ...nki.types import Access, Affine
from ...nki.types import ds as _ds
from .homes import HbmHome

P = 128
LOAD_BYTES = 16384  # per partition: batches per load grow up to this
WIDTHS = (1024, 512, 256, 128)  # candidate columns per load below whole rows
MAX_BLOCKS_PER_BODY = 8  # loads unrolled in one loop body


@dataclass(frozen=True)
class ColumnBlocks:
    """How a ``(B, N, D)`` input is loaded: ``bb`` batches x ``W`` columns of all rows per load,
    ``per_body = (kb, kj)`` loads per loop body."""

    outer: int  # B: product of the dims before the reduced axis
    rows: int  # N: the reduced axis (128·q)
    cols: int  # D: product of the dims after it
    width: int  # W: columns per load
    batches: int  # bb: batches per load
    per_body: tuple[int, int]  # (batch loads, column blocks) per loop body

    @property
    def q(self) -> int:
        return self.rows // P

    @property
    def loads(self) -> list[tuple[int, int]]:
        """(rb, rj) of the loads of one loop body, in order."""
        kb, kj = self.per_body
        return [(rb, rj) for rb in range(kb) for rj in range(kj)]

    @property
    def trips(self) -> tuple[int, int]:
        """Loop trips over batch loads and column blocks."""
        kb, kj = self.per_body
        return self.outer // (self.batches * kb), self.cols // (self.width * kj)


def split_axis(shape, a: int) -> tuple[int, int, int]:
    """(B, N, D) of ``shape`` reduced over axis ``a``."""
    b_, d = 1, 1
    for s in shape[:a]:
        b_ *= s
    for s in shape[a + 1 :]:
        d *= s
    return b_, shape[a], d


def _divisor_up_to(n: int, most: int) -> int:
    return max(c for c in range(1, most + 1) if n % c == 0)


def plan_blocks(
    b_: int, n: int, d: int, budget: int, tiles: int, extra: int, widest: int | None = None
) -> ColumnBlocks | None:
    """The widest load (whole rows, else ``WIDTHS``) whose ``tiles`` block-sized tiles plus
    ``extra`` bytes fit ``budget`` bytes per partition (at most ``widest`` columns when given),
    with as many batches per load as fit ``LOAD_BYTES``; None if none does (or the rows or
    columns are not multiples of 128)."""
    if n % P or d % P:
        return None
    q = n // P
    for w in (d, *(c for c in WIDTHS if c < d)):
        if d % w or (widest is not None and w > widest) or tiles * q * w * 4 + extra > budget:
            continue
        bb = 1
        for k in range(b_, 0, -1):
            if b_ % k == 0 and k * q * w * 4 <= LOAD_BYTES and tiles * k * q * w * 4 + extra <= budget:
                bb = k
                break
        kj = _divisor_up_to(d // w, MAX_BLOCKS_PER_BODY)
        kb = _divisor_up_to(b_ // bb, MAX_BLOCKS_PER_BODY // kj)
        return ColumnBlocks(b_, n, d, w, bb, (kb, kj))
    return None


def blocks_view(home: HbmHome, g: ColumnBlocks, interleaved: bool = False) -> HbmHome | None:
    """``home`` as (B/(bb·kb), D/(W·kj), kb, kj, 128, bb, q, W): load ``(i, j, rb, rj)`` holds
    batches ``(i·kb + rb)·bb ...`` and columns ``(j·kj + rj)·W ...``, partition ``p`` rows
    ``p·q ... p·q + q - 1`` (``interleaved``: rows ``p, p + 128, ...``, so that piece ``g``
    transposed holds rows ``128·g ...`` in order); None if that needs a copy."""
    b_, n, d, w, bb = g.outer, g.rows, g.cols, g.width, g.batches
    kb, kj = g.per_body
    h = home.reshape((b_, n, d))
    if h is None or h.strides[2] != 1:
        return None
    sb, sn = h.strides[0], h.strides[1]
    sp, sg = (sn, P * sn) if interleaved else (g.q * sn, sn)
    shape = (b_ // (bb * kb), d // (w * kj), kb, kj, P, bb, g.q, w)
    return HbmHome(h.base, h.offset, shape, (bb * kb * sb, w * kj, bb * sb, w, sp, sb, sg, 1))


def loop(b, loops: ExitStack, count: int):
    """A ``fori_loop`` index over ``count`` (0 when ``count`` is 1)."""
    if count == 1:
        return 0
    return Affine.of(loops.enter_context(b.fori_loop(0, count)))


def load_window(i, j, g: ColumnBlocks, r: int) -> tuple:
    """The leading slices of load ``r`` of the body at loop indices ``(i, j)`` in a
    ``blocks_view``."""
    rb, rj = g.loads[r]
    return (_ds(i, 1), _ds(j, 1), _ds(rb, 1), _ds(rj, 1))


def block_window(g: ColumnBlocks) -> tuple:
    """The slices of one whole load: (128, bb, q, W)."""
    return (_ds(0, P), _ds(0, g.batches), _ds(0, g.q), _ds(0, g.width))


def input_home(ctx, v: Value, g: ColumnBlocks, interleaved: bool = False) -> HbmHome | None:
    """``v``'s HBM home as a ``blocks_view``, None when it has none or needs a copy."""
    return blocks_view(ctx.home(v), g, interleaved) if v in ctx.homes else None


def store_columns(b, column, units: int, out: Value, factor: float, name: str, dtype="f32") -> None:
    """Store per-unit results held one 128-column slice per partition column (``column(u0,
    cnt)``: the ``[128, cnt]`` access of units ``u0 ... u0 + cnt - 1``) into ``out``, an HBM
    ``(units, 128)`` view: per 128 units one TensorE transpose puts them in rows, a ScalarE copy
    out of PSUM (times ``factor`` unless it is 1; into ``dtype``, a VectorE copy when that is
    not f32) and one DMA."""
    for u0 in range(0, units, P):
        cnt = min(P, units - u0)
        pt = b.alloc((cnt, P), "f32", "psum", name=f"{name}_t")
        b.nc_transpose(dst=Access(pt, (_ds(0, cnt), _ds(0, P))), data=column(u0, cnt))
        vt = b.alloc((cnt, P), dtype, "sbuf", name=name)
        whole = Access(vt, (_ds(0, cnt), _ds(0, P)))
        if factor == 1.0:
            engine = "scalar" if dtype == "f32" else "vector"
            b.tensor_copy(dst=whole, src=Access(pt, (_ds(0, cnt), _ds(0, P))), engine=engine)
        else:
            b.activation(dst=whole, op="copy", data=Access(pt, (_ds(0, cnt), _ds(0, P))), scale=factor)
        b.dma_copy(dst=Access(out, (_ds(u0, cnt), _ds(0, P))), src=whole)
