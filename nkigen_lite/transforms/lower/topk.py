"""Native lowering of ``tensor.topk``: the max8 / find_index8 / match_replace8 idiom, streamed.

The operand is viewed as ``(rows, n)`` with the topk axis last (a copy only when its HBM home
is not such a view). Per block of up to 128 rows (rows on the partitions; full blocks in a
``fori_loop``, the remainder peeled) the axis is read in chunks of at most ``top8_free_max``
elements that fit the SBUF budget (full chunks in a ``fori_loop``, the remainder peeled), each
chunk exactly once. Per chunk, ``R = ceil(k / 8)`` rounds: ``max8`` gives the chunk's next 8
largest values, ``find_index8`` their positions (a value repeated among the 8 takes successive
positions in ascending order: documented), and the first k become candidates, their positions
plus the chunk's start (an ``iota`` column) global indices (fp32, exact below 2**24); between
rounds ``match_replace8`` replaces the 8 taken elements by ``-inf``. After the last chunk the
candidates (k per chunk, in chunk order) are merged by the same rounds, and each merged
value's index is picked from the candidates by a one-hot compare (``iota == position``, times
the candidate indices, summed). The values and indices (int32) are stored once.

Few long rows are folded (``fold_factor``): each row alone on q partitions, a segment of n / q
per partition (the iota's channel multiplier adds the segment's start), its q x k candidates
moved onto one partition by an SBUF -> SBUF DMA in partition order and merged there.

**Ties go to the lower index by construction.** Within a chunk, equal values among the 8 get
ascending positions (find_index8's documented order for repeated values; the replaced elements
are the first occurrences, so a later round's copies of a value lie after the earlier rounds').
Candidates are laid out chunk by chunk, so among equal candidates the candidate order is the
global index order, and the merge's find_index8 picks them in that order again. Nothing depends
on which equal element max8 itself reads first: only its values are used.

**Sentinel.** ``k <= 8`` needs no replacement, so the values are read as they are (``-inf``
included). ``k > 8`` replaces taken elements by ``-inf``, which must lie below every value: the
chunk is first copied to fp32 keys ``max(x, -FLT_MAX)`` — exact for every dtype narrower than
fp32 (bf16 / fp16 / small integers never reach ``-FLT_MAX``), and the values are mapped back
(``-FLT_MAX`` → ``-inf``). fp32 with ``k > 8`` would tie ``-inf`` with ``-FLT_MAX``: its keys
merge ``-inf`` into ``-FLT_MAX`` and NaN into ``+inf``, and a second selection over small codes
places those four values exactly (topk_wide.py, exact for every input, NaN first).

``native_topk_refusal`` says which topk ops this path takes; decompose expands the others into
selection rounds (``TopkOp.expansion``; docs/lowering.md lists the cases).
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.dtypes import float32, int32, uint32
from ...ir.errors import BuildError
from ...ir.value import Value
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T
from .column_argmax import emit_column_argmax, match_column_argmax
from .context import LowerContext
from .homes import HbmHome
from .permute_copy import MAX_FREE
from .rules import item_rule
from .topk_merge import NEG_BYTES, NEG_FLT_MAX, _finish_values, _merge, _tile, negated
from .topk_nan import NAN_BYTES, first_nan_wins, fold_max, keys_max, nan_free_keys, nan_mode, ones8
from .topk_onchip import held_rows, note_values
from .topk_rows import emit_rows_at_once, fits
from .topk_wide import WIDE_BYTES, fix_up, wide_keys, wide_mode
from .views import copy_home

RAW_DTYPES = frozenset({"f32", "bf16", "f16", "i8", "u8", "i16", "u16"})
"""Dtypes whose values fp32 holds exactly (max8 / find_index8 compare in fp32)."""
INDEX_LIMIT = 2**24  # fp32 holds every index below this exactly
MERGE_MAX = 4096  # candidates one partition merges: candidates, indices, positions, one-hot in SBUF


def _topk_plan(n: int, k: int, dtype, target, nan: bool = False, negate: bool = False):
    """(rounds, chunk size, number of chunks, candidates per row, keyed) for one row of n
    (``nan``: with the NaN-free keys of topk_nan.py; ``negate``: with argmin's fp32 keys)."""
    w = target.top8_width
    rounds = -(-k // w)
    keyed = rounds > 1
    per_elem = dtype.itemsize + (4 if keyed else 0) + (NAN_BYTES if nan else 0) + (NEG_BYTES if negate else 0)
    if keyed and wide_mode(k, dtype, target):  # topk_wide.py: the codes and their temporaries
        per_elem += WIDE_BYTES
    budget = (target.sbuf_bytes_per_partition * 3) // 8  # rotating buffers double it
    cmax = max(w, min(target.top8_free_max, budget // per_elem))
    nchunks = -(-n // cmax)
    size = -(-n // nchunks)
    nchunks = -(-n // size)
    return rounds, size, nchunks, nchunks * k, keyed


def native_topk_refusal(op, target) -> str | None:
    """Why the native lowering cannot take ``op`` (a tensor.topk) on ``target``, or None."""
    return topk_refusal(op.operand(0).type, op.attrs["k"], op.attrs["axis"], target)


def topk_refusal(x, k: int, axis: int, target, negate: bool = False) -> str | None:
    """Why the native lowering cannot take topk(x, k, axis) (``x`` a TensorType; ``negate``: of
    ``-x``, argmin.py), or None."""
    if getattr(target, "top8_width", None) is None:
        return f"{getattr(target, 'name', 'the target')} has no max8 / find_index8 / match_replace8"
    n = x.shape[axis]
    if x.dtype.name not in RAW_DTYPES:
        return f"{x.dtype} values are not all exact in fp32 (the top-8 instructions compare in fp32)"
    if n < target.top8_free_min:
        return f"the axis has {n} < {target.top8_free_min} elements (max8 reads at least 8)"
    if n > INDEX_LIMIT:
        return f"the axis has {n:,} > 2**24 elements (indices are exact in fp32 below 2**24)"
    rounds, size, nchunks, cands, keyed = _topk_plan(
        n, k, x.dtype, target, k == 1 and x.dtype.is_float, negate
    )
    if nchunks > 1 and cands > MERGE_MAX:
        return f"{cands:,} candidates per row exceed the merge's {MERGE_MAX:,}"
    if n - (nchunks - 1) * size < target.top8_free_min:
        return "the last chunk would hold fewer than 8 elements"
    return None


def _chunks(ctx: LowerContext, total: int, step: int, body) -> None:
    """``body(index, offset, size)`` over [0, total) in chunks of ``step``: full chunks in a
    fori_loop (or once), the remainder peeled; ``index`` counts chunks."""
    full, rem = divmod(total, step)
    if full == 1:
        body(Affine.of(0), Affine.of(0), step)
    elif full > 1:
        with ctx.b.fori_loop(0, full) as j:
            body(Affine.of(j), Affine.of(j) * step, step)
    if rem:
        body(Affine.of(full), Affine.of(full * step), rem)


def _rows_view(ctx: LowerContext, h: HbmHome, perm, rows: int, cols: int, copy_in: bool):
    """``h`` with ``perm`` applied as a (rows, cols) HBM home, and the home to copy back to
    (None when the view is ``h`` itself)."""
    v = h.transpose(perm).reshape((rows, cols))
    if v is not None:
        if copy_in and _transposed(ctx, v):  # rows contiguous: transpose on chip once
            tmp = ctx.alloc_hbm((rows, cols), h.base.type.dtype)
            copy_home(ctx, v, tmp)  # copy_permuted's transposes (a plain DMA if it declines)
            return tmp, None
        return v, None
    tmp = ctx.alloc_hbm((rows, cols), h.base.type.dtype)
    shaped = tmp.reshape(tuple(h.shape[p] for p in perm)).transpose(tuple(np.argsort(perm)))
    if copy_in:
        copy_home(ctx, h, shaped)
    return tmp, shaped


def _transposed(ctx: LowerContext, v: HbmHome) -> bool:
    """``v`` (rows, cols) runs along its rows (a topk over a non-last axis, ``np.argmax(x,
    0)``): read as it stands, each element is one DMA descriptor; copy_permuted turns it into a
    contiguous buffer through TensorE transposes (float data of 2 or 4 bytes, blocks of 128)."""
    (rows, cols), dt, p = v.shape, v.base.type.dtype, ctx.partitions
    return (
        v.strides == (1, v.strides[1])
        and v.strides[1] != 1
        and rows > 1
        and cols > 1
        and dt.is_float
        and dt.itemsize in (2, 4)
        and (cols <= p or cols % p == 0)
        and (rows <= MAX_FREE or rows % p == 0)
    )


@item_rule(T.TopkOp)
def lower_topk(ctx: LowerContext, op: T.TopkOp) -> None:
    reason = native_topk_refusal(op, ctx.target)
    if reason is not None:  # decompose keeps only the ops this path takes
        raise BuildError(f"lowering: {op.name} has no native lowering here ({reason}); decompose expands it")
    ca = match_column_argmax(op, (ctx.target.sbuf_bytes_per_partition * 3) // 4)
    if ca is not None and emit_column_argmax(ctx, ca):  # over a non-last axis: column_argmax.py
        return
    x = op.operand(0)
    k, axis = op.attrs["k"], op.attrs["axis"]
    shape, dt = x.type.shape, x.type.dtype
    n = shape[axis]
    rows = math.prod(shape) // n
    perm = tuple(d for d in range(len(shape)) if d != axis) + (axis,)
    src, _ = _rows_view(ctx, ctx.home(x), perm, rows, n, copy_in=True)
    outs = []
    for r in op.results:
        home, back = _rows_view(ctx, ctx.home_for_store(r), perm, rows, k, copy_in=False)
        outs.append((home, back))
    held = held_rows(ctx, x, rows, n, perm == tuple(range(len(shape))))
    reads = bool(op.results[0].uses) or outs[0][1] is not None
    _emit(ctx, src, outs[0][0], outs[1][0], n, k, dt, reads, held=held, stored=op.results[0])
    for (_home, back), r in zip(outs, op.results):
        if back is not None:
            copy_home(ctx, back, ctx.home(r))


def _emit(
    ctx: LowerContext,
    src: HbmHome,
    out_v: HbmHome | None,
    out_i: HbmHome,
    n: int,
    k: int,
    dt,
    values: bool = True,
    negate: bool = False,
    held: Access | None = None,
    stored: Value | None = None,
) -> None:
    """topk of ``src`` (rows, n) into ``out_v`` / ``out_i`` (rows, k); ``values``: whether the
    values are read (argmax reads only the indices); ``out_v`` None: no values stored (argmin);
    ``negate``: the top k of ``-src`` (argmin.py: only the indices, ``values`` False); ``held``:
    the SBUF tile holding ``src`` whole, ``stored``: the values result (topk_onchip.py)."""
    assert not (negate and values) and (out_v is not None or not values)
    rows = src.shape[0]
    v_view = ctx.view(out_v) if out_v is not None else None  # views are made outside the loops
    i_view = ctx.view(out_i)
    nan = nan_mode(k, dt, values)
    q = fold_factor(rows, n, k, dt, ctx.target, negate)
    # folding needs each row's q pieces addressable as rows of one view (a strided source, e.g.
    # topk along a non-last axis, may not reshape without a copy: then one row per partition)
    folded = src.reshape((rows * q, n // q)) if q > 1 else None
    if folded is not None and fits(rows, q, n // q, k, dt, ctx.target, nan, negate):
        emit_rows_at_once(ctx, ctx.view(folded), v_view, i_view, rows, q, n // q, k, dt, values, negate)
        return
    if folded is not None:
        _emit_folded(ctx, folded, v_view, i_view, rows, q, n // q, k, dt, nan, negate)
        return
    b, t = ctx.b, ctx.target
    x_view = ctx.view(src)
    rounds, _, nchunks, _, keyed = _topk_plan(n, k, dt, t, nan, negate)
    held = held if nchunks == 1 and rounds == 1 else None  # the tile is then only read

    def block(_bi: Affine, r0: Affine, p: int) -> None:
        cv, ci, width, cn, codes = _candidates(
            ctx, x_view, r0, p, n, k, dt, stride=0, pad=True, nan=nan, negate=negate, held=held
        )
        ov = b.alloc((p, k), dt, "sbuf", name="top_v")
        oi = b.alloc((p, k), int32, "sbuf", name="top_i")
        got = b.alloc((p, k), float32, "sbuf", name="top_if") if nan else oi
        if codes is not None:  # fp32, k > 8: two selections and their fix-up (topk_wide.py)
            _merge_wide(ctx, (cv, ci), codes, ov, oi, p, k, rounds, width, nchunks == 1)
        elif nchunks == 1:  # the chunk's candidates are the answer
            _finish_values(ctx, ov, _tile(cv, p, (0, k, 1)), p, 0, k, keyed and dt.is_float)
            b.tensor_copy(dst=got, src=_tile(ci, p, (0, 1, 1), (0, k, 1)))
        else:
            _merge(ctx, cv, ci, ov, got, p, k, rounds, width, keyed and dt.is_float)
        if nan:
            first_nan_wins(ctx, _tile(cn, p, (0, nchunks, 1)), got, oi, p)
        elif v_view is not None:
            b.dma_copy(dst=Access(v_view, (DimSlice(r0, p, 1), DimSlice(0, k, 1))), src=ov)
            if p == rows:
                note_values(ctx, stored, ov)
        b.dma_copy(dst=Access(i_view, (DimSlice(r0, p, 1), DimSlice(0, k, 1))), src=oi)

    _chunks(ctx, rows, ctx.partitions, block)


def _merge_wide(ctx, main, codes, ov, oi, p: int, k: int, rounds: int, m: int, direct: bool) -> None:
    """The top k of fp32 values from the candidates of the main keys and of the codes (pairs of
    (p, m) values, (p, 1, m) indices; ``direct``: one chunk, the first k candidates are the
    answer) into ``ov`` (p, k) fp32 and ``oi`` (p, k) int32 (topk_wide.py)."""
    b = ctx.b
    merged = []
    for (cv, ci), tag in ((main, "v"), (codes, "code")):
        mv = b.alloc((p, k), float32, "sbuf", name=f"merged_{tag}")
        mi = b.alloc((p, k), float32, "sbuf", name=f"merged_{tag}i")
        if direct:
            b.tensor_copy(dst=mv, src=_tile(cv, p, (0, k, 1)))
            b.tensor_copy(dst=mi, src=_tile(ci, p, (0, 1, 1), (0, k, 1)))
        else:
            _merge(ctx, cv, ci, mv, mi, p, k, rounds, m, False)
        merged += [mv, mi]
    idx = b.alloc((p, k), float32, "sbuf", name="top_if")
    fix_up(ctx, *merged, ov, idx, p, k)
    b.tensor_copy(dst=oi, src=idx)


def fold_factor(rows: int, n: int, k: int, dt, target, negate: bool = False) -> int:
    """Partitions one row is spread over (1: rows stay one per partition). Few long rows are
    folded: each row runs alone on ``q`` partitions, a segment of n / q elements each (``q``
    the largest divisor of n with 16 <= q <= 128 that keeps a segment >= 8 elements and the
    q x (candidates per segment) merge row within max8's 16,384), when rows <= q / 2. fp32 with
    k > 8 (topk_wide.py) takes instead the valid ``q`` whose segment plus merge row is shortest:
    each pass of its rounds reads both, on the segment's partitions and then on one."""
    p, w = target.num_partitions, target.top8_width
    valid = []
    for q in range(p, 15, -1):
        if n % q or rows * 2 > q or n // q < target.top8_free_min:
            continue
        _, _, nchunks, _, _ = _topk_plan(n // q, k, dt, target, k == 1 and dt.is_float, negate)
        if w <= q * nchunks * k <= MERGE_MAX:
            if not wide_mode(k, dt, target):
                return q
            valid.append((n // q + q * nchunks * k, -q))
    return -min(valid)[1] if valid else 1


def _emit_folded(
    ctx, xq: HbmHome, v_view, i_view, rows: int, q: int, seg: int, k: int, dt, nan: bool = False, negate=False
) -> None:
    """Each row on ``q`` partitions (xq: the input as (rows * q, seg)): per partition the top k
    of its segment (global index = partition * seg + position, an iota channel multiplier),
    then the q x k candidates moved onto one partition in partition order (one SBUF -> SBUF DMA
    each, so equal values stay in index order) and merged there."""
    b, t = ctx.b, ctx.target
    x_view = ctx.view(xq)
    rounds, _, _, _, keyed = _topk_plan(seg, k, dt, t, nan, negate)

    def one_row(ri: Affine, _r: Affine, _one: int) -> None:
        cv, ci, width, cn, codes = _candidates(
            ctx, x_view, ri * q, q, seg, k, dt, stride=seg, pad=False, nan=nan, negate=negate
        )
        total = q * width

        def onto_row(pair, tag: str):
            cv1 = b.alloc((1, total), float32, "sbuf", name=f"row_cand_{tag}")
            ci1 = b.alloc((1, 1, total), float32, "sbuf", name=f"row_cand_{tag}i")
            b.dma_copy(dst=cv1, src=pair[0])
            b.dma_copy(dst=ci1, src=pair[1])
            return cv1, ci1

        cv1, ci1 = onto_row((cv, ci), "v")
        ov = b.alloc((1, k), dt, "sbuf", name="top_v")
        oi = b.alloc((1, k), int32, "sbuf", name="top_i")
        got = b.alloc((1, k), float32, "sbuf", name="top_if") if nan else oi
        if codes is not None:  # fp32, k > 8: two selections and their fix-up (topk_wide.py)
            _merge_wide(ctx, (cv1, ci1), onto_row(codes, "code"), ov, oi, 1, k, rounds, total, False)
        else:
            _merge(ctx, cv1, ci1, ov, got, 1, k, rounds, total, keyed and dt.is_float)
        if nan:  # every segment's NaN candidates onto the row's partition, in partition order
            cn1 = b.alloc((1, cn.type.shape[0] * cn.type.shape[1]), float32, "sbuf", name="row_cand_nan")
            b.dma_copy(dst=cn1, src=cn)
            first_nan_wins(ctx, cn1, got, oi, 1)
        elif v_view is not None:
            b.dma_copy(dst=Access(v_view, (DimSlice(ri, 1, 1), DimSlice(0, k, 1))), src=ov)
        b.dma_copy(dst=Access(i_view, (DimSlice(ri, 1, 1), DimSlice(0, k, 1))), src=oi)

    _chunks(ctx, rows, 1, one_row)


def _candidates(
    ctx,
    x_view,
    r0: Affine,
    p: int,
    length: int,
    k: int,
    dt,
    stride: int,
    pad: bool,
    nan: bool = False,
    negate=False,
    held: Access | None = None,
):
    """Per partition of rows [r0, r0 + p) of ``x_view`` (or of ``held``, the SBUF tile holding
    them all when one chunk covers a row: read in place), the top k of each chunk of its
    ``length`` elements: (candidate values (p, width) fp32, their global indices (p, 1, width)
    fp32, width, the chunks' NaN candidates (p, chunks) fp32 with ``nan`` (topk_nan.py) else
    None). Partition c's elements start at index c * ``stride``. With ``pad``, fewer than 8
    candidates are padded to 8 with -inf (index 0) after the real ones. With ``negate`` the keys
    are ``-x`` (argmin; the candidate values are then negated values)."""
    b, t = ctx.b, ctx.target
    w = t.top8_width
    rounds, size, nchunks, _, keyed = _topk_plan(length, k, dt, t, nan, negate)
    m = nchunks * k
    width = max(m, w) if pad else m
    wide = keyed and wide_mode(k, dt, t)  # a second selection over the codes (topk_wide.py)

    def candidate_tiles(tag: str):
        cv = b.alloc((p, width), float32, "sbuf", name=f"cand_{tag}")
        ci = b.alloc((p, 1, width), float32, "sbuf", name=f"cand_{tag}i")
        if width > m:
            b.memset(dst=_tile(cv, p, (m, width - m, 1)), value=float("-inf"))
            b.memset(dst=_tile(ci, p, (0, 1, 1), (m, width - m, 1)), value=0.0)
        return cv, ci

    cv, ci = candidate_tiles("v")
    codes = candidate_tiles("code") if wide else None
    folded = nan and fold_max(size, t)  # the select's max replaces max8 (topk_nan.py)
    v8 = keys_max(ctx, p) if folded else b.alloc((p, w), float32, "sbuf", name="max8")
    idx8 = b.alloc((p, w), uint32, "sbuf", name="pos8")
    cn = b.alloc((p, nchunks), float32, "sbuf", name="cand_nan") if nan else None
    ones = ones8(ctx, p) if nan else None

    def chunk(j: Affine, c0: Affine, size_c: int) -> None:
        if held is not None:
            tile = held.tensor
        else:
            tile = b.alloc((p, size_c), dt, "sbuf", name="chunk")
            b.dma_copy(dst=tile, src=Access(x_view, (DimSlice(r0, p, 1), DimSlice(c0, size_c, 1))))
        start = b.alloc((p, 1), float32, "sbuf", name="chunk_start")
        b.iota(dst=start, pattern=[[0, 1]], offset=c0, channel_multiplier=stride)
        data = negated(ctx, tile, p, size_c) if negate else tile
        if wide:
            data, code_keys = wide_keys(ctx, tile, p, size_c)
            rounds_of(j, start, code_keys, codes[0], codes[1], False)
        elif keyed:
            keys = b.alloc((p, size_c), float32, "sbuf", name="keys")
            b.tensor_scalar(dst=keys, data=data, op0="maximum", operand0=NEG_FLT_MAX)
            data = keys
        if nan:
            cand = Access(cn, (DimSlice(0, p, 1), DimSlice(j, 1, 1)))
            maxcol = _tile(v8, p, (0, 1, 1)) if folded else None
            data = nan_free_keys(ctx, tile, p, size_c, start, ones, cand, data if negate else None, maxcol)
        rounds_of(j, start, data, cv, ci, folded, v8, idx8)

    def rounds_of(j, start, data, cv, ci, folded, v8=None, idx8=None) -> None:
        """The chunk's top k of ``data`` into candidates ``cv`` / ``ci`` (slots j·k …)."""
        v8 = b.alloc((p, w), float32, "sbuf", name="max8") if v8 is None else v8
        idx8 = b.alloc((p, w), uint32, "sbuf", name="pos8") if idx8 is None else idx8
        for r in range(rounds):
            take = min(w, k - r * w)
            slot = j * k + r * w
            if not folded:
                b.max8(dst=v8, src=data)
            b.find_index8(dst=idx8, data=data, vals=v8)
            b.tensor_copy(
                dst=Access(cv, (DimSlice(0, p, 1), DimSlice(slot, take, 1))), src=_tile(v8, p, (0, take, 1))
            )
            gidx = Access(ci, (DimSlice(0, p, 1), DimSlice(0, 1, 1), DimSlice(slot, take, 1)))
            b.tensor_scalar(dst=gidx, data=_tile(idx8, p, (0, take, 1)), op0="add", operand0=start)
            if r < rounds - 1:
                b.match_replace8(dst=data, data=data, vals=v8, imm=float("-inf"))

    _chunks(ctx, length, size, chunk)
    return cv, ci, width, cn, codes
