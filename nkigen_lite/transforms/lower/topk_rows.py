"""topk of a few long rows, every row at once (greedy sampling: argmax over 1–8 rows of logits).

topk.py folds each of the few rows onto ``q`` partitions (a segment of ``n / q`` each) and ran
the rows one after another, each row's ``q·k`` candidates moved onto one partition by SBUF →
SBUF DMAs: every row paid two DMAs' fixed cost between its top-8 pass and its merge, and the
HW-DGE queues, served in program order, held the next row's load behind them. Here, when every
row's segment fits the SBUF budget and k <= 8 (one max8 round):

- every row's segment is loaded up front, one DMA per row, so the top-8 pass of a row runs while
  the next rows stream in (splitting a row into pieces was measured slower: each piece adds
  candidates to the merge and transposes to the tail);
- per row, ``max8`` and ``find_index8`` give each partition its top k, their global indices
  ``partition · seg + position`` (an ``iota`` column);
- per candidate rank one TensorE transpose moves the candidates of every row from the
  partitions onto the row's own partition — transposes are data movement, so values, -inf and
  indices (fp32, exact below 2**24) are unchanged — and a copy places them in candidate order
  ``partition, rank``, the global index order, so ties still go to the lower index;
- the rows are merged side by side, one row per partition (topk.py's ``_merge``), and the values
  (only when something reads them) and the int32 indices are stored with one DMA each.
"""

from __future__ import annotations

from ...ir.dtypes import float32, int32, uint32
from ...nki.types import Access, DimSlice
from .topk_merge import NEG_BYTES, _merge, _tile, halved, merge_top1, negated
from .topk_nan import (
    NAN_BYTES,
    first_nan_wins,
    fold_max,
    keys_max,
    nan_free_keys,
    nan_mode,
    ones8,
)
from .topk_sentinel import sentinel_keys, sentinel_rows


def fits(rows: int, q: int, seg: int, k: int, dt, target, nan: bool = False, negate: bool = False) -> bool:
    """True when every row's segment fits the SBUF budget at once (with ``nan``, and one
    segment's NaN-free keys: topk_nan.py), one top-8 pass covers a segment (k <= 8, the segment
    within max8's free size) and the merge row stays within max8's limits (``negate``: and one
    segment's negated keys, argmin)."""
    budget = (target.sbuf_bytes_per_partition * 3) // 8
    return (
        k <= target.top8_width
        and rows <= q
        and seg <= target.top8_free_max
        and rows * seg * dt.itemsize + (seg * NAN_BYTES if nan else 0) + (seg * NEG_BYTES if negate else 0)
        <= budget
        and target.top8_free_min <= q * k <= target.top8_free_max
    )


def emit_rows_at_once(
    ctx, x_view, v_view, i_view, rows: int, q: int, seg: int, k: int, dt, values: bool, negate: bool = False
) -> None:
    """The module docstring's kernel: ``x_view`` is the input as (rows · q, seg); with ``negate``
    the top k of ``-x`` (argmin), and ``v_view`` may be None (no values stored)."""
    b, t = ctx.b, ctx.target
    w = t.top8_width
    nan = nan_mode(k, dt, values)
    loaded = []
    for r in range(rows):
        tile = b.alloc((q, seg), dt, "sbuf", name="segment")
        b.dma_copy(dst=tile, src=Access(x_view, (DimSlice(r * q, q, 1), DimSlice(0, seg, 1))))
        loaded.append(tile)
    start = b.alloc((q, 1), float32, "sbuf", name="segment_start")
    b.iota(dst=start, pattern=[[0, 1]], channel_multiplier=seg)
    cand_v = b.alloc((q, rows, k), float32, "sbuf", name="cand_v")
    cand_i = b.alloc((q, rows, k), float32, "sbuf", name="cand_i")
    cand_n = b.alloc((q, rows), float32, "sbuf", name="cand_nan") if nan else None
    sentinel = nan and sentinel_keys(dt, fold_max(seg, t))  # one find_index8 per row: topk_nan.py
    if sentinel:
        sentinel_rows(ctx, loaded, q, seg, start, -1.0 if negate else 1.0, cand_v, cand_i, cand_n)
    ones = ones8(ctx, q) if nan and not sentinel else None
    for r, tile in enumerate([] if sentinel else loaded):
        if nan and fold_max(seg, t):  # the select's max fills v8's column 0: no max8 pass
            v8 = keys_max(ctx, q)
            cand, maxcol = _tile(cand_n, q, (r, 1, 1)), _tile(v8, q, (0, 1, 1))
            scale = -1.0 if negate else 1.0  # keys through PSUM (topk_nan._keys_via_psum)
            tile, nan_candidate = nan_free_keys(
                ctx, tile, q, seg, start, ones, cand, None, maxcol, scale, True
            )
        else:
            nan_candidate = None
            keys = negated(ctx, tile, q, seg) if negate else None
            if nan:
                tile = nan_free_keys(ctx, tile, q, seg, start, ones, _tile(cand_n, q, (r, 1, 1)), keys)
                keys = None
            tile = tile if keys is None else keys
            v8 = b.alloc((q, w), float32, "sbuf", name="max8")
            # a top-1 after the first row: GpSimd halves the row beside VectorE (the first row's
            # would only delay VectorE's start) when the half still holds max8's minimum
            halve = k == 1 and dt.is_float and r and -(-seg // 2) >= t.top8_free_min
            b.max8(dst=v8, src=halved(ctx, tile, q, seg) if halve else tile)
        idx8 = b.alloc((q, w), uint32, "sbuf", name="pos8")
        b.find_index8(dst=idx8, data=tile, vals=v8)
        b.tensor_copy(dst=_tile(cand_v, q, (r, 1, 1), (0, k, 1)), src=_tile(v8, q, (0, k, 1)))
        b.tensor_scalar(
            dst=_tile(cand_i, q, (r, 1, 1), (0, k, 1)),
            data=_tile(idx8, q, (0, k, 1)),
            op0="add",
            operand0=start,
        )
        if nan_candidate is not None:  # after the keys' candidates, which the transposes wait for
            nan_candidate()
    slots = k
    m = q * k
    row_v = b.alloc((rows, m), float32, "sbuf", name="row_cand_v")
    top1 = k == 1  # merge_top1: the first maximum (and its value) without _merge's rounds
    row_i = b.alloc((rows, m) if top1 else (rows, 1, m), float32, "sbuf", name="row_cand_i")
    i_dims = () if top1 else ((0, 1, 1),)  # merge_top1 reads 2-D indices, _merge 3-D
    engine = "scalar"
    for s in range(slots):
        for src, dst in (
            (cand_v, _tile(row_v, rows, (s, q, slots))),
            (cand_i, _tile(row_i, rows, *i_dims, (s, q, slots))),
        ):
            ps = b.alloc((rows, q), float32, "psum", name="cand_t")
            b.nc_transpose(dst=ps, data=_tile(src, q, (0, rows, 1), (s, 1, 1)))
            engine = "vector" if engine == "scalar" else "scalar"
            b.tensor_copy(dst=dst, src=ps, engine=engine)
    ov = b.alloc((rows, k), dt, "sbuf", name="top_v")
    oi = b.alloc((rows, k), int32, "sbuf", name="top_i")
    got = b.alloc((rows, k), float32, "sbuf", name="top_if") if nan else oi
    if top1:  # the first maximum's index; its value only when something reads it
        merge_top1(ctx, row_v, row_i, got, rows, m, ov if values and v_view is not None else None)
    else:
        _merge(ctx, row_v, row_i, ov, got, rows, k, 1, m, False)
    if nan:  # the segments' NaN candidates onto each row's partition, as the others
        row_n = b.alloc((rows, q), float32, "sbuf", name="row_cand_nan")
        ps = b.alloc((rows, q), float32, "psum", name="cand_t")
        b.nc_transpose(dst=ps, data=_tile(cand_n, q, (0, rows, 1)))
        b.tensor_copy(dst=row_n, src=ps, engine="scalar")
        first_nan_wins(ctx, row_n, got, oi, rows)
    if values and v_view is not None:
        b.dma_copy(dst=Access(v_view, (DimSlice(0, rows, 1), DimSlice(0, k, 1))), src=ov)
    b.dma_copy(dst=Access(i_view, (DimSlice(0, rows, 1), DimSlice(0, k, 1))), src=oi)
