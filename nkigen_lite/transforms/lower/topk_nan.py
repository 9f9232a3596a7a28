"""NaN as NumPy's argmax / argmin see it, on the native top-8 path (topk.py, topk_rows.py).

The top-8 instructions do not document how they order NaN, so the interpreters refuse a NaN
they read. A top-1 whose values nothing reads (``b.argmax``, ``b.argmin``, ``np.argmax`` and
``np.argmin`` once decompose has made them ``topk(x, 1)``) over floats instead runs NaN-free:
per loaded segment (a chunk of a row on one partition)

- ``nan = x != x`` (GpSimd) marks the NaNs; ``keys = where(nan, -inf, x)`` (VectorE select) is
  what find_index8 reads, so the top-1 of the keys is the first maximum of the numbers; the
  select's own max reduction (NISA select_reduce, ``reduce_res``) gives the keys' maximum in the
  same pass, so no max8 pass runs: ``find_index8(keys, [max, 0, ...])`` finds its first position
  (``keys_max`` writes the max into column 0 of an 8-wide tile whose other columns are 0) —
  when a segment is longer than 2·MIN_II (``fold_max``; the read-out and the memset of that
  tile cost MIN_II each, max8 max(MIN_II, N));
- ``find_index8(nan, [1] * 8)`` gives the segment's first NaN position, or the all-ones
  sentinel when it has none (documented), so the segment's NaN candidate is
  ``start + position`` or ``NO_NAN``.

After the merge of the keys' candidates, the smallest NaN candidate of the row (a min over its
segments: every NaN candidate is a global index) replaces the merged index when it is not
``NO_NAN``: the first NaN wins, as in NumPy, whatever the numbers hold (+inf included).

"""

from __future__ import annotations

from ...ir.dtypes import float32, uint8, uint32
from ...nki.types import Access, DimSlice
from .topk_merge import _tile

NO_NAN = float(2**25)  # above every index (< 2**24): "this segment has no NaN"
NAN_BYTES = 5  # per element: the f32 keys and the u8 NaN mask


def nan_mode(k: int, dt, values: bool) -> bool:
    """Whether topk(k) of ``dt`` runs NaN-free with NaN candidates (a float top-1 whose values
    nothing reads)."""
    return k == 1 and dt.is_float and not values


def ones8(ctx, p: int):
    """The (p, 8) fp32 tile of ones find_index8 looks for in a NaN mask."""
    t = ctx.b.alloc((p, ctx.target.top8_width), float32, "sbuf", name="nan_vals")
    ctx.b.memset(dst=t, value=1.0)
    return t


def fold_max(size: int, target) -> bool:
    """Whether the select's max replaces the max8 pass over a segment of ``size`` elements."""
    return size > 2 * target.min_ii_cycles


def keys_max(ctx, p: int):
    """The (p, 8) fp32 tile find_index8 reads as ``vals``: column 0 receives the keys' max (the
    select's ``reduce_res``), the other columns are 0 (find_index8 needs 8 defined values; only
    column 0's position is used)."""
    t = ctx.b.alloc((p, ctx.target.top8_width), float32, "sbuf", name="keys_max")
    ctx.b.memset(dst=t, value=0.0)
    return t


def nan_free_keys(
    ctx,
    tile,
    p: int,
    size: int,
    start,
    ones,
    cand: Access,
    keys_of=None,
    maxcol=None,
    psum_scale=None,
    defer=False,
):
    """The fp32 keys of ``tile`` (p, size) with NaN as -inf, which max8 / find_index8 read; writes
    the segment's NaN candidate (its first NaN's global index, ``start`` + position, or NO_NAN)
    into the (p, 1) access ``cand``. ``keys_of``: the values the keys take where ``tile`` is not
    NaN (default ``tile``; argmin passes ``-tile``, NaN exactly where ``tile`` is). ``maxcol``: a
    (p, 1) access that receives the keys' max (the select's reduction). ``psum_scale`` (1 or -1,
    with ``maxcol``; ``keys_of`` unused): the keys are ``psum_scale · tile``, built piece by piece
    through PSUM (``_keys_via_psum``). ``defer``: return (keys, a function emitting the NaN
    candidate's instructions), for the caller to emit them after the keys' find_index8."""
    b, w = ctx.b, ctx.target.top8_width
    mask = b.alloc((p, size), uint8, "sbuf", name="nan_mask")
    keys = b.alloc((p, size), float32, "sbuf", name="nan_free")
    b.tensor_tensor(dst=mask, data1=tile, data2=tile, op="not_equal", engine="gpsimd")
    if psum_scale is not None:
        _keys_via_psum(ctx, tile, mask, keys, p, size, psum_scale, maxcol)
    else:
        on_true = tile if keys_of is None else keys_of
        b.select(
            dst=keys,
            predicate=mask,
            on_true=on_true,
            on_false=float("-inf"),
            reverse_pred=True,
            reduce_res=maxcol,
        )

    def candidate() -> None:
        """cand = start + the first NaN's position, or NO_NAN: find_index8's all-ones sentinel
        (2**32 - 1, documented for a missing value) plus start stays above NO_NAN, so one
        ``min(pos + start, NO_NAN)`` gives both (fp32: every real position is exact)."""
        pos = b.alloc((p, w), uint32, "sbuf", name="nan_pos")
        b.find_index8(dst=pos, data=mask, vals=ones)
        b.tensor_scalar(
            dst=cand, data=_tile(pos, p, (0, 1, 1)), op0="add", operand0=start, op1="minimum", operand1=NO_NAN
        )

    if defer:
        return keys, candidate
    candidate()
    return keys


def first_nan_wins(ctx, nan_cands: Access, idx_f, oi, p: int) -> None:
    """``oi`` (p, 1) int32 = the smallest of ``nan_cands`` (p, m) when it is a NaN's index, else
    the merged fp32 index ``idx_f`` (p, 1)."""
    b = ctx.b
    first = b.alloc((p, 1), float32, "sbuf", name="first_nan")
    b.tensor_reduce(dst=first, op="minimum", data=nan_cands, axis=(1,))
    has = b.alloc((p, 1), uint8, "sbuf", name="row_has_nan")
    b.tensor_scalar(dst=has, data=first, op0="less", operand0=NO_NAN)
    pick = b.alloc((p, 1), float32, "sbuf", name="argext")
    b.select(
        dst=pick, predicate=has, on_true=first, on_false=Access(idx_f, (DimSlice(0, p, 1), DimSlice(0, 1, 1)))
    )
    b.tensor_copy(dst=oi, src=pick)


def _keys_via_psum(ctx, tile, mask, keys, p: int, size: int, scale: float, maxcol: Access) -> None:
    """``keys = where(mask, -inf, scale · tile)`` (``mask``: the NaNs of ``tile``) with the
    keys' max in ``maxcol``: ``key_pieces`` emitted in order, then the pieces' max reduced."""
    parts, pieces = key_pieces(ctx, tile, mask, keys, p, size, scale, float("-inf"))
    for piece in pieces:
        piece()
    ctx.b.tensor_reduce(dst=maxcol, op="maximum", data=parts, axis=(1,))


def key_pieces(ctx, tile, mask, keys, p: int, size: int, scale: float, nan_key: float):
    """``keys = where(mask, nan_key, scale · tile)`` (``mask``: the NaNs of ``tile``) in pieces
    of one PSUM bank (512 fp32): (the (p, pieces) tile of the pieces' maxima, one function per
    piece emitting it). Per piece ScalarE copies ``scale · tile`` into PSUM (fp32, exact;
    beside GpSimd's mask) and the select reads it from PSUM and the mask from SBUF — one input
    stream per memory, so N VectorE cycles rather than 2N — and reduces the piece's max into
    its column. ``mask`` None: the piece builds its own mask (GpSimd, a tile of its own), so its
    select waits for that piece's mask only."""
    b = ctx.b
    width = ctx.target.psum_bank_bytes // float32.itemsize
    bounds = [(c0, min(size, c0 + width)) for c0 in range(0, size, width)]
    parts = b.alloc((p, len(bounds)), float32, "sbuf", name="piece_max")

    def piece(i: int, c0: int, c1: int) -> None:
        cols = (c0, c1 - c0, 1)
        if mask is None:
            pred = b.alloc((p, c1 - c0), uint8, "sbuf", name="nan_mask")
            data = _tile(tile, p, cols)
            b.tensor_tensor(dst=pred, data1=data, data2=data, op="not_equal", engine="gpsimd")
        else:
            pred = _tile(mask, p, cols)
        ps = b.alloc((p, c1 - c0), float32, "psum", name="keys_psum")
        b.activation(dst=ps, op="copy", data=_tile(tile, p, cols), scale=scale)
        b.select(
            dst=_tile(keys, p, cols),
            predicate=pred,
            on_true=ps,
            on_false=nan_key,
            reverse_pred=True,
            reduce_res=_tile(parts, p, (i, 1, 1)),
        )

    return parts, [lambda i=i, c0=c0, c1=c1: piece(i, c0, c1) for i, (c0, c1) in enumerate(bounds)]
