"""The pieces of topk.py's lowering shared with topk_rows.py: tile accesses, the merge of
candidates on their partitions (max8, find_index8, index picked by a one-hot compare), the
values' sentinel mapped back and argmin's negated keys."""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import float32, uint8, uint32
from ...nki.types import Access, Affine, DimSlice

NEG_FLT_MAX = float(-np.finfo(np.float32).max)
ONEHOT_BYTES = 64 * 1024  # per partition, the one-hot tile of one merge step
NEG_BYTES = 4  # per element: argmin's fp32 negated keys


def _tile(t, p: int, *dims) -> Access:
    """An access of tile ``t``: partitions [0, p) then (offset, size, stride) per free dim."""
    return Access(
        t, (DimSlice(0, p, 1),) + tuple(DimSlice(Affine.of(o), n, s if n > 1 else 1) for o, n, s in dims)
    )


def _merge(ctx, cv, ci, ov, oi, p: int, k: int, rounds: int, m: int, map_back: bool) -> None:
    """The top k of the (p, m) candidates ``cv`` (indices in ``ci``) into ``ov`` / ``oi``: per
    round max8, find_index8 (positions), then index = sum(ci * (iota == position)) for ``g``
    positions at a time (the one-hot tile within ONEHOT_BYTES)."""
    b, w = ctx.b, ctx.target.top8_width
    spread = p == 1 and k <= ctx.partitions and m > w  # the pick on k partitions (pick_spread)
    g = max(1, min(w, ONEHOT_BYTES // (4 * m)))
    pos = b.alloc((p, w, 1), uint32, "sbuf", name="merge_pos")
    posf = b.alloc((p, w, 1), float32, "sbuf", name="merge_posf")
    if spread:
        posk = b.alloc((1, k), float32, "sbuf", name="merge_posk")
    else:
        iot = b.alloc((p, 1, m), float32, "sbuf", name="cand_pos")
        b.iota(dst=iot, pattern=[[1, m]])
        onehot = b.alloc((p, g, m), float32, "sbuf", name="onehot")
    mv = b.alloc((p, w), float32, "sbuf", name="merge_v")
    gi = b.alloc((p, w), float32, "sbuf", name="merge_i")
    for r in range(rounds):
        b.max8(dst=mv, src=cv)
        b.find_index8(dst=pos, data=cv, vals=mv)
        if r < rounds - 1:
            b.match_replace8(dst=cv, data=cv, vals=mv, imm=float("-inf"))
        take = min(w, k - r * w)
        if spread:
            b.tensor_copy(dst=_tile(posk, 1, (r * w, take, 1)), src=_tile(pos, 1, (0, take, 1), (0, 1, 1)))
            _finish_values(ctx, ov, _tile(mv, p, (0, take, 1)), p, r * w, take, map_back)
            continue
        b.tensor_copy(dst=posf, src=pos)
        for j0 in range(0, take, g):
            gj = min(g, take - j0)
            hot = _tile(onehot, p, (0, gj, 1), (0, m, 1))
            b.tensor_tensor(
                dst=hot,
                data1=_tile(iot, p, (0, gj, 0), (0, m, 1)),
                data2=_tile(posf, p, (j0, gj, 1), (0, m, 0)),
                op="equal",
            )
            b.tensor_tensor(dst=hot, data1=hot, data2=_tile(ci, p, (0, gj, 0), (0, m, 1)), op="multiply")
            b.tensor_reduce(dst=_tile(gi, p, (j0, gj, 1)), op="add", data=hot, axis=(2,))
        _finish_values(ctx, ov, _tile(mv, p, (0, take, 1)), p, r * w, take, map_back)
        b.tensor_copy(dst=_tile(oi, p, (r * w, take, 1)), src=_tile(gi, p, (0, take, 1)))
    if spread:
        pick_spread(ctx, ci, posk, oi, k, m)


def pick_spread(ctx, ci, posk, oi, k: int, m: int) -> None:
    """``oi`` (1, k) = ``ci[0, 0, posk[0, j]]`` for the k merged positions ``posk`` (1, k) fp32,
    one output per partition: the positions go onto k partitions by a TensorE transpose, the
    (1, 1, m) candidate indices onto every one of them by a ones matmul per PSUM bank (1.0 x an
    integer below 2**24: exact, as the group emitter's partition broadcast), each partition's
    one-hot compare reads its m candidates (k x m elements over k partitions, not k x m on one),
    and a transpose brings the k indices back onto the row's partition. The merge of a folded
    row (m = q x k candidates on one partition) spent most of its time in that pick."""
    b, t = ctx.b, ctx.target
    ps = b.alloc((k, 1), float32, "psum", name="pos_t")
    b.nc_transpose(dst=ps, data=posk)
    pos_col = b.alloc((k, 1), float32, "sbuf", name="pos_col")
    b.tensor_copy(dst=pos_col, src=ps)
    ones = b.alloc((1, k), float32, "sbuf", name="ones")
    b.memset(dst=ones, value=1.0)
    fmax = t.psum_bank_fmax
    pieces = -(-m // fmax)
    part = b.alloc((k, pieces), float32, "sbuf", name="pick_part")
    for i, c0 in enumerate(range(0, m, fmax)):
        wd = min(fmax, m - c0)
        bc = b.alloc((k, wd), float32, "psum", name="cand_bcast")
        b.nc_matmul(dst=bc, stationary=ones, moving=_tile(ci, 1, (0, 1, 1), (c0, wd, 1)))
        iot = b.alloc((k, wd), float32, "sbuf", name="cand_pos")
        b.iota(dst=iot, pattern=[[1, wd]], offset=c0)
        hot = b.alloc((k, wd), float32, "sbuf", name="onehot")
        b.tensor_scalar(dst=hot, data=iot, op0="equal", operand0=_tile(pos_col, k, (0, 1, 1)))
        b.tensor_tensor(dst=hot, data1=hot, data2=bc, op="multiply")
        b.tensor_reduce(dst=_tile(part, k, (i, 1, 1)), op="add", data=hot, axis=(1,))
    col = b.alloc((k, 1), float32, "sbuf", name="pick_col")
    b.tensor_reduce(dst=col, op="add", data=part, axis=(1,))
    back = b.alloc((1, k), float32, "psum", name="pick_t")
    b.nc_transpose(dst=back, data=col)
    b.tensor_copy(dst=oi, src=back)


def _finish_values(ctx, ov, keys: Access, p: int, at: int, count: int, map_back: bool) -> None:
    """ov[:, at:at+count] = the values of fp32 ``keys`` (-FLT_MAX back to -inf when keyed)."""
    b = ctx.b
    dst = _tile(ov, p, (at, count, 1))
    if not map_back:
        b.tensor_copy(dst=dst, src=keys)
        return
    pred = b.alloc((p, count), uint8, "sbuf", name="finite")
    b.tensor_scalar(dst=pred, data=keys, op0="greater", operand0=NEG_FLT_MAX)
    b.select(dst=dst, predicate=pred, on_true=keys, on_false=float("-inf"))


def negated(ctx, tile, p: int, size: int):
    """``-tile`` (p, size) as fp32 keys, by one ScalarE activation (copy, scale -1): argmin is the
    top-1 of the negated values, exact for every dtype the top-8 path takes (fp32 negation is
    exact, a NaN stays a NaN, -inf becomes +inf, and equal values stay equal, so ties keep their
    order). ScalarE runs it beside GpSimd's NaN mask of ``tile``."""
    keys = ctx.b.alloc((p, size), float32, "sbuf", name="neg_keys")
    ctx.b.activation(dst=keys, op="copy", data=tile, scale=-1.0)
    return keys


TOP1_MISS = float(2**25)  # above every candidate index (< 2**24)


def merge_top1(ctx, cv, ci, out, p: int, m: int, value=None) -> None:
    """``out`` (p, 1) fp32 = the index of the first maximum of the (p, m) NaN-free candidates
    ``cv`` with global indices ``ci`` (p, m): the smallest index among the candidates equal to
    their max (so ties go to the lower index whatever the candidates' order) — a max, a
    compare, a select and a min over the m candidates, where ``_merge`` takes seven
    instructions. ``value`` (p, 1): also receives the max (a copy, off the index's chain)."""
    b = ctx.b
    top = b.alloc((p, 1), float32, "sbuf", name="merge_max")
    b.tensor_reduce(dst=top, op="maximum", data=cv, axis=(1,))
    if value is not None:
        b.tensor_copy(dst=value, src=top, engine="scalar")
    hit = b.alloc((p, m), uint8, "sbuf", name="merge_hit")
    b.tensor_scalar(dst=hit, data=cv, op0="equal", operand0=_tile(top, p, (0, 1, 1)))
    idx = b.alloc((p, m), float32, "sbuf", name="merge_idx")
    b.select(dst=idx, predicate=hit, on_true=ci, on_false=TOP1_MISS)
    b.tensor_reduce(dst=out, op="minimum", data=idx, axis=(1,))


def halved(ctx, tile, p: int, n: int):
    """The (p, ceil(n / 2)) elementwise max of ``tile``'s two halves (p, n) — the middle element
    of an odd n pairs with itself — on GpSimd (``150 + 2·(n/2)`` cycles, beside VectorE): its max
    is the tile's, so a top-1's max8 reads half the elements (every value it returns is one of
    the tile's, as find_index8 needs). A NaN stays a NaN (the top-8 instructions refuse it)."""
    h = -(-n // 2)
    out = ctx.b.alloc((p, h), tile.type.dtype, "sbuf", name="half_max")
    ctx.b.tensor_tensor(
        dst=out,
        data1=_tile(tile, p, (0, h, 1)),
        data2=_tile(tile, p, (n - h, h, 1)),
        op="maximum",
        engine="gpsimd",
    )
    return out
