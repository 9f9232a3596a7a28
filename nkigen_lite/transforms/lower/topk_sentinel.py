"""NumPy's argmax / argmin NaN rule in one find_index8 per segment, for bf16 and fp16 rows
(topk_rows.py, every row at once; topk_nan.py has the general rule and its fp32 form).

No bf16 or fp16 value is ``-FLT_MAX`` (their largest magnitudes are below it), so the keys
write ``NAN_KEY`` = ``-FLT_MAX`` at the NaNs (``where(x != x, NAN_KEY, x)``, through PSUM as
``topk_nan.key_pieces`` builds it): every other key keeps its value and order, and ``NAN_KEY``
marks exactly the NaNs. The ``vals`` tile find_index8 reads holds ``NAN_KEY`` in every column
but column 1, which receives the keys' max (the selects' reductions), so one find_index8 gives
both positions: column 0 the first NaN (or the documented all-ones miss), column 1 the first
maximum. When the max is ``NAN_KEY`` itself (a segment of NaN and -inf only) find_index8 gives
the repeated value successive matches (documented), so column 1 holds a later NaN or the miss —
but that segment has a NaN, so the row's first NaN replaces whatever the merge picks
(``topk_nan.first_nan_wins``). fp32 keeps the mask's own find_index8: any fp32 value may be data.

The rows are emitted software-pipelined on VectorE: the pieces' selects of row r + 1 are placed
between row r's max reduction and its find_index8, so no VectorE instruction starts right after
the one it depends on (a same-engine dependency costs ~100 cycles, docs/costmodel.md). The
candidates of every row are then written by three instructions, not three per row.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import float32, uint32
from .topk_merge import _tile
from .topk_nan import NO_NAN, key_pieces

NAN_KEY = float(-np.finfo(np.float32).max)  # no bf16 / fp16 value: the NaNs' key
MAX_COLUMN = 1  # the vals column holding the keys' max (column 0 finds the first NaN)


def sentinel_keys(dt, folded: bool) -> bool:
    """Whether ``dt``'s NaNs take NAN_KEY and one find_index8 finds the first NaN and the first
    maximum: floats narrower than fp32, with the selects' max (``folded``: topk_nan.fold_max)."""
    return folded and dt.is_float and dt.itemsize < 4


def sentinel_rows(ctx, tiles: list, p: int, size: int, start, scale: float, cand_v, cand_i, cand_n) -> None:
    """The top-1 candidates of the loaded ``tiles`` (one row each, (p, size)), ``scale`` 1 (or -1:
    argmin's keys ``-x``): the max into ``cand_v`` (p, rows, 1), its global index (``start`` +
    position) into ``cand_i`` (likewise) and the first NaN's (or NO_NAN) into ``cand_n`` (p, rows)."""
    b, w, rows = ctx.b, ctx.target.top8_width, len(tiles)
    vals = b.alloc((p, rows, w), float32, "sbuf", name="keys_max")
    b.memset(dst=vals, value=NAN_KEY)
    pos = b.alloc((p, rows, w), uint32, "sbuf", name="pos8")
    keys, pieces, tails = [], [], []
    for r, tile in enumerate(tiles):
        k = b.alloc((p, size), float32, "sbuf", name="nan_free")
        parts, emit = key_pieces(ctx, tile, None, k, p, size, scale, NAN_KEY)
        keys.append(k)
        pieces.append(emit)
        row_vals = _tile(vals, p, (r, 1, 1), (0, w, 1))

        def reduce(r=r, parts=parts) -> None:
            b.tensor_reduce(
                dst=_tile(vals, p, (r, 1, 1), (MAX_COLUMN, 1, 1)), op="maximum", data=parts, axis=(1,)
            )

        def find(r=r, k=k, row_vals=row_vals) -> None:
            b.find_index8(dst=_tile(pos, p, (r, 1, 1), (0, w, 1)), data=k, vals=row_vals)

        tails.append([reduce, find])
    for emit in pieces[0]:
        emit()
    for r in range(rows):
        for f in _alternate(pieces[r + 1] if r + 1 < rows else [], tails[r]):
            f()
    every = (0, rows, 1)
    b.tensor_copy(dst=_tile(cand_v, p, every, (0, 1, 1)), src=_tile(vals, p, every, (MAX_COLUMN, 1, 1)))
    b.tensor_scalar(
        dst=_tile(cand_i, p, every, (0, 1, 1)),
        data=_tile(pos, p, every, (MAX_COLUMN, 1, 1)),
        op0="add",
        operand0=start,
    )
    b.tensor_scalar(
        dst=_tile(cand_n, p, every),
        data=_tile(pos, p, every, (0, 1, 1)),
        op0="add",
        operand0=start,
        op1="minimum",
        operand1=NO_NAN,
    )


def _alternate(a: list, b: list) -> list:
    """a[0], b[0], a[1], b[1], ..., then the longer list's rest."""
    out = []
    for i in range(max(len(a), len(b))):
        out += a[i : i + 1] + b[i : i + 1]
    return out
