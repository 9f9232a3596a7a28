"""``tensor.causal_attention`` lowered block by block: only diagonal key blocks are masked, key
blocks above the diagonal are never computed.

One ``fori_loop`` over the (flat) KV heads (straight-line code over all of them, list-scheduled
as one block, when there are at most ``MAX_UNROLLED_UNITS`` units: the next head's loads and
transposes then fill the previous head's drain; one list-scheduled block per KV head when O
stays on chip, written over the front's kept q: attention_out.py). Per KV head: K and V are
loaded once (one DMA each, keys on the partitions in 128-key chunks), Kᵀ by bf16 TensorE
transposes, and Q of the head's R query heads for all query tiles by one DMA, Qᵀ likewise. Per
query head and query tile t of up to 128 rows the keys run to the tile's last row: chunks 0..t-1
are entirely at or below the diagonal (no mask), chunk t is the diagonal one (``S + mask/scale``
against one constant tile built once by GpSimd ``affine_select`` for the whole kernel), chunks
after t are skipped (with a mask <= ``SKIP_MASK`` their probabilities are ``exp(mask + ...)``, 0
in fp32). The diagonal chunk's mask is accumulated into the scores' PSUM bank by a TensorE
matmul of a 16-bit identity and a 16-bit mask tile (mask16.py; an f16 mask/scale beyond the f16
range is added in fp32 by VectorE instead), so each bank is one row max and one exp (VectorE,
the busiest engine in the layer's attention, no longer adds the mask, reduces the diagonal chunk
on its own or sums two row-sum parts). The tile's scores stay in PSUM (at most ``MAX_KEYS``
keys: four banks of fp32): ``-max`` by negated row reduces read from PSUM, ``P = exp(scale·S -
scale·max)`` written in the 16-bit dtype by ScalarE with the row sums fused, ``Pᵀ`` by bf16
TensorE transposes (8 chunks per PSUM bank, evacuated by ScalarE and VectorE in turn), ``O = Pᵀᵀ
V`` accumulated in PSUM and ``O · 1/Σ`` cast while leaving it; the R heads of a tile are stored
by one DMA. Units (query head, tile) are emitted as a software pipeline — per step the scores of
unit u+1, the ``Pᵀ`` and ``P V`` of unit u, the softmax of unit u+1, the output of unit u — and
the loop body is then reordered by the list schedule of emit_order.py (within the PSUM banks and
3/4 of SBUF), so each engine's in-order stream takes the work that is ready first (attention
alone, 16/8 heads at seq 2048: 1,733 -> 804 µs scheduled; at seq 512 unrolled over the KV heads:
161.9 -> 108.8 µs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import get_dtype
from ...ir.graph import Block
from ...nki.types import Access, Affine, DimSlice
from ...nki.types import access_of as _acc
from ...nki.types import ds as _ds
from .attention_out import give_home, keep_target, store_group, stored_heads
from .attention_units import attention_dims
from .context import LowerContext
from .emit_order import list_order
from .homes import HbmHome
from .identity_tile import build_identity
from .mask16 import mask_value_16
from .views import copy_home

P = 128  # partitions
BANK = 512  # fp32 scores per PSUM bank
MAX_HEAD_DIM = 128  # q / k feature dim on the partitions for Q Kᵀ
MAX_VALUE_DIM = 512  # v feature dim: one PSUM bank of fp32 outputs
MAX_KEYS = 2048  # a query tile's scores in at most four PSUM banks
MAX_UNROLLED_UNITS = 64  # (query head, tile) units emitted without a loop over KV heads
MIN_KEYS = 128  # one query tile (Qwen3-0.6B layer seq 128: 153.3 -> 147.4 µs scheduled vs the row pipeline)
SKIP_MASK = -1e4  # masks at most this make the blocks above the diagonal contribute 0
SLOTS = 8  # 128-column bf16 transposes per PSUM bank
DTYPES = ("bf16", "f16")
F32 = get_dtype("f32")
_EVAC = ("scalar", "vector")  # engines evacuating Pᵀ banks, in turn (GpSimd cannot read PSUM)
# engines of ``O · 1/Σ`` as it leaves PSUM, unit by unit in turn, with more than one query tile
# (Qwen3-0.6B layer at seq 512 / 2048: VectorE alone 333.2 / 1,548.4 µs, in turn 332.3 /
# 1,542.2, ScalarE alone 333.3 / 1,550.1; at seq 128, one tile, VectorE alone 118.2, in turn 118.5)
_O_SCALE = ("vector", "scalar")


def supported(q_shape, k_shape, v_shape, dtype, mask_value) -> bool:
    """q (..., H, M, D), k (..., G, N, D), v (..., G, N, Dv) of equal ranks >= 3 and equal
    leading dims, G dividing H, ``MIN_KEYS`` <= M == N <= ``MAX_KEYS``, D <= 128, Dv <= 512, a 16-bit float
    dtype and a mask <= ``SKIP_MASK``."""
    dims = attention_dims(q_shape, k_shape, v_shape)
    if dims is None:
        return False
    m, d, n, dv = dims
    if m != n or not MIN_KEYS <= n <= MAX_KEYS or d > MAX_HEAD_DIM or dv > MAX_VALUE_DIM:
        return False
    return getattr(dtype, "name", dtype) in DTYPES and float(mask_value) <= SKIP_MASK


def _finish(gen):
    """Run a stage generator to its end; its return value."""
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return stop.value


def _flat_home(ctx: LowerContext, v, shape) -> HbmHome:
    """``v``'s home as ``shape`` (leading dims flattened); a row-major copy when no view is."""
    h = ctx.home(v).reshape(tuple(shape))
    if h is None:
        h = ctx.alloc_hbm(v.type.shape, v.dtype)
        copy_home(ctx, ctx.home(v), h)
        h = h.reshape(tuple(shape))
    return h


@dataclass(frozen=True)
class _Rows:
    """An operand's rows in SBUF, row ``c·128 + p`` at ``tile[p, c, ...]``: per head, ``width``
    features. ``head0``: None for a tile of one head (``[p, c, width]``), else the first head of
    the KV head's group in a tile of heads (``[p, c, heads, width]``, or ``[p, c, heads·width]``
    as the front keeps an unsplit projection)."""

    tile: object
    head0: object
    width: int

    def at(self, rows: int, c: int, j: int) -> Access:
        """Rows ``[0, rows)`` of chunk ``c``, head ``j`` of the group, all features."""
        t, f = self.tile, self.width
        if self.head0 is None:
            return _acc(t, (0, rows), (c, 1), (0, f))
        h = Affine.of(self.head0) + j
        if t.type.rank == 3:
            return _acc(t, (0, rows), (c, 1), (h * f, f))
        return _acc(t, (0, rows), (c, 1), (h, 1), (0, f))


class _Emitter:
    """Emits the kernel (module docstring) for one op into the kernel being lowered."""

    def __init__(self, ctx: LowerContext, op):
        q, k, v = op.operands
        self.ctx, self.b = ctx, ctx.b
        self.dt = q.dtype
        self.scale = float(np.float32(op.attrs["scale"]))  # the fp32 operand the reference uses too
        self.mask_value = float(op.attrs["mask_value"])
        self.m, self.d = q.type.shape[-2:]
        self.n, self.dv = v.type.shape[-2:]
        self.hq, self.hk = math.prod(q.type.shape[:-2]), math.prod(k.type.shape[:-2])
        self.rep = self.hq // self.hk
        self.tiles = -(-self.m // P)
        self.chunks = -(-self.n // P)
        ctx.at_op(op)
        # operands the layer's front left on chip (front_keep.py): [p, row tiles, free...]
        self.kept = ctx.kept_rows.get(op, {})
        # rows on the partitions, heads along the free axis: (rows, heads, features) views
        dims = ((self.hq, self.m, self.d), (self.hk, self.n, self.d), (self.hk, self.n, self.dv))
        self.q_rows, self.k_rows, self.v_rows = (
            None if self._all_kept(i) else _flat_home(ctx, x, shape).transpose((1, 0, 2))
            for i, (x, shape) in enumerate(zip(op.operands, dims))
        )
        self.copy_to = None
        # O written over the front's kept q for the O projection (attention_out.py)
        found = keep_target(ctx, op)
        self.o_keep = None
        if found is not None:
            self.o_value, self.o_keep = found
            self.o_keep.stored = stored_heads(ctx.target, self.o_keep)
            ctx.kept_out[self.o_value] = self.o_keep
            self.o_rows = None
            return
        out = ctx.home_for_store(op.result)
        flat = out.reshape((self.hq, self.m, self.dv))
        if flat is None:  # the result's home is not a view of (heads, rows, dv): copy after
            self.copy_to = out
            flat = ctx.alloc_hbm(op.result.type.shape, self.dt).reshape((self.hq, self.m, self.dv))
            self.tmp_home = flat
        self.o_rows = flat.transpose((1, 0, 2))

    def _all_kept(self, i: int) -> bool:
        """True when every KV head's part of operand ``i`` is on chip (a list with None: the
        front kept only its first KV heads, front_keep.py; the others are loaded)."""
        buf = self.kept.get(i)
        return buf is not None and not (isinstance(buf, list) and any(t is None for t in buf))

    def _loaded(self, i: int, g) -> bool:
        """True when KV head ``g``'s part of operand ``i`` comes from HBM."""
        buf = self.kept.get(i)
        return buf is None or (isinstance(buf, list) and buf[g] is None)

    def view(self, h: HbmHome):
        return self.ctx.view(h)

    # ---- once per kernel -------------------------------------------------------------------
    def mask_tile(self):
        """(identity, mask): where key j > row p of a diagonal chunk the mask tile holds
        mask/scale, 0 elsewhere, added to the unscaled scores. 16-bit when the dtype carries the
        mask (mask16.py), with the 16-bit identity its matmul into PSUM reads; else fp32 (added
        by VectorE) and no identity. Built once per kernel by GpSimd."""
        b = self.b
        value = mask_value_16(float(np.float32(self.mask_value / self.scale)), True, self.dt)
        ident = None
        if value is not None:
            ident = build_identity(b, self.dt)
        else:
            value = float(np.float32(self.mask_value / self.scale))
        t = b.alloc((P, P), F32 if ident is None else self.dt, name="causal_bias")
        b.memset(dst=_acc(t, (0, P), (0, P)), value=0.0, engine="gpsimd")
        b.affine_select(
            dst=_acc(t, (0, P), (0, P)),
            pattern=[[1, P]],
            channel_multiplier=-1,
            on_true_tile=_acc(t, (0, P), (0, P)),
            on_false_value=value,
            cmp_op="less_equal",
        )
        return ident, t

    # ---- once per KV head ------------------------------------------------------------------
    def load(self, g):
        """K, V and the group's Q of KV head ``g`` as ``_Rows`` sources: loaded into SBUF (keys /
        rows on the partitions, chunk-major), or the buffers the front kept on chip."""
        b, d, dv = self.b, self.d, self.dv
        out = {}
        if self._loaded(1, g):
            k_nat = b.alloc((P, self.chunks, d), self.dt, name="k_nat")
            self._rows_dma(k_nat, self.k_view, self.n, _ds(g, 1), d, 1)
            out[1] = _Rows(k_nat, None, d)
        if self._loaded(0, g):
            q_nat = b.alloc((P, self.tiles, self.rep, d), self.dt, name="q_nat")
            self._rows_dma(q_nat, self.q_view, self.m, _ds(Affine.of(g) * self.rep, self.rep), d, self.rep)
            out[0] = _Rows(q_nat, 0, d)
        if self._loaded(2, g):
            v_nat = b.alloc((P, self.chunks, dv), self.dt, name="v_nat")
            self._rows_dma(v_nat, self.v_view, self.n, _ds(g, 1), dv, 1)
            out[2] = _Rows(v_nat, None, dv)
        for i, buf in self.kept.items():
            if i in out:
                continue
            if isinstance(buf, list):  # one tile per KV head (attention_out.py): g is static
                out[i] = _Rows(buf[g], 0, self.dv if i == 2 else d)
            else:
                out[i] = _Rows(buf, Affine.of(g) * (self.rep if i == 0 else 1), self.dv if i == 2 else d)
        return out[1], out[2], out[0]

    def _rows_view(self, rows: HbmHome, n: int):
        """(view, chunked): ``rows`` (n, heads, f) as (128, n/128, heads, f) when n is a multiple
        of 128 (row c·128 + p at [p, c]), else as it is. Made before the loop (views are
        kernel-level)."""
        if n % P == 0:
            return self.view(rows.reshape((n // P, P) + rows.shape[1:]).transpose((1, 0, 2, 3))), True
        return self.view(rows), False

    def _rows_dma(self, tile, rows, n: int, heads: DimSlice, f: int, nh: int) -> None:
        """Row r = c·128 + p of ``rows`` (from ``_rows_view``) into ``tile[p, c, (head,) :f]``:
        one DMA when n is a multiple of 128, else one per chunk."""
        b = self.b
        view, chunked = rows
        lead = (_ds(0, nh),) if tile.type.rank == 4 else ()
        if chunked:
            src = _acc(view, (0, P), (0, n // P), heads, (0, f))
            b.dma_copy(dst=_acc(tile, (0, P), (0, n // P), *lead, (0, f)), src=src)
            return
        for c in range(-(-n // P)):
            kc = min(P, n - c * P)
            b.dma_copy(
                dst=_acc(tile, (0, kc), (c, 1), *lead, (0, f)), src=_acc(view, (c * P, kc), heads, (0, f))
            )

    def transposed(self, nat, count: int, rows_of, out, col0: int, head: int = 0) -> None:
        """``out[:features, col0 + i·128 + r]`` = the 128-row blocks of head ``head`` of the
        ``_Rows`` source ``nat`` transposed (16-bit TensorE transposes, ``SLOTS`` per PSUM bank,
        one copy per bank)."""
        b, f = self.b, nat.width
        for s0 in range(0, count, SLOTS):
            sn = min(SLOTS, count - s0)
            ps = b.alloc((P, SLOTS * P), self.dt, "psum", name="ps_t")
            for i in range(s0, s0 + sn):
                r = rows_of(i)
                data = nat.at(r, i, head)
                b.nc_transpose(dst=_acc(ps, (0, f), ((i - s0) * P, r)), data=data)
            width = (sn - 1) * P + rows_of(s0 + sn - 1)
            engine = "vector" if (s0 // SLOTS) % 2 == 0 else "scalar"
            b.tensor_copy(
                dst=_acc(out, (0, f), (col0 + s0 * P, width)), src=_acc(ps, (0, f), (0, width)), engine=engine
            )

    # ---- one (query head, query tile) unit, in two stages ------------------------------------
    def score_parts(self, q_t, k_t, j: int, t: int, mask, lo: int = 0, stop: int | None = None):
        """A generator (one yield, after the matmuls) returning (parts, rows): S of query head
        ``j``, tile ``t`` over keys [lo, stop) (``lo`` a multiple of 128; ``stop`` defaults to
        the tile's last row) in PSUM banks; when the range reaches the tile's last row, its
        diagonal chunk + mask/scale: accumulated into the bank by an identity matmul (16-bit
        mask), else added into an SBUF tile by VectorE (fp32 mask). ``parts``: (tile, column,
        width, key - lo)."""
        b, d = self.b, self.d
        r0 = t * P
        mt = min(P, self.m - r0)
        keys = r0 + mt if stop is None else stop
        rows = (0, mt)
        q_cols = _acc(q_t, (0, d), (j * self.m + r0, mt))
        banks = []
        for b0 in range(lo, keys, BANK):
            w = min(BANK, keys - b0)
            s = b.alloc((P, BANK), F32, "psum", name="scores")
            b.nc_matmul(dst=_acc(s, rows, (0, w)), stationary=q_cols, moving=_acc(k_t, (0, d), (b0, w)))
            banks.append((s, b0, w))
        ident, bias = mask
        diagonal = keys == r0 + mt  # the range reaches the tile's last row
        if diagonal and ident is not None:  # mask/scale added in PSUM by an identity matmul
            s_last, b_last, _ = banks[-1]
            b.nc_matmul(
                dst=_acc(s_last, rows, (r0 - b_last, mt)),
                stationary=_acc(ident, rows, rows),
                moving=_acc(bias, rows, (0, mt)),
                accumulate=True,
            )
        yield  # the previous unit's P V goes here, between this unit's scores and its softmax
        if not diagonal or ident is not None:
            return [(s, 0, w, b0 - lo) for s, b0, w in banks], mt
        s_last, b_last, _ = banks[-1]
        y = b.alloc((P, P), F32, name="scores_diag")
        b.tensor_tensor(
            dst=_acc(y, rows, (0, mt)),
            data1=_acc(s_last, rows, (r0 - b_last, mt)),
            data2=_acc(bias, rows, (0, mt)),
            op="add",
        )
        parts = [(s, 0, w - (mt if s is s_last else 0), b0 - lo) for s, b0, w in banks]
        return [p for p in parts if p[2] > 0] + [(y, 0, mt, r0 - lo)], mt

    def neg_max(self, parts, mt: int):
        """``-max S`` per row of the ``parts`` (negated row maxes, then their minimum)."""
        b, rows = self.b, (0, mt)
        cols = len(parts)
        negs = b.alloc((P, cols), F32, name="neg_maxes")
        for i, (src, c0, w, _k0) in enumerate(parts):
            b.tensor_reduce(
                dst=_acc(negs, rows, (i, 1)),
                op="maximum",
                data=_acc(src, rows, (c0, w)),
                axis=1,
                negate=True,
                keepdims=True,
            )
        if cols == 1:
            return negs
        neg = b.alloc((P, 1), F32, name="neg_max")
        b.tensor_reduce(
            dst=_acc(neg, rows, (0, 1)), op="minimum", data=_acc(negs, rows, (0, cols)), axis=1, keepdims=True
        )
        return neg

    def exps(self, parts, bias, mt: int, width: int):
        """(P, Σ): ``P = exp(scale·S + bias)`` of the ``parts`` in the 16-bit dtype (``width``
        keys) by ScalarE with the row sums fused, and the row sums' total."""
        b, rows = self.b, (0, mt)
        cols = len(parts)
        p = b.alloc((P, width), self.dt, name="probs")
        sums = b.alloc((P, cols), F32, name="row_sums")
        for i, (src, c0, w, k0) in enumerate(parts):
            b.activation(
                dst=_acc(p, rows, (k0, w)),
                op="exp",
                data=_acc(src, rows, (c0, w)),
                bias=_acc(bias, rows, (0, 1)),
                scale=self.scale,
                reduce_res=_acc(sums, rows, (i, 1)),
            )
        if cols == 1:
            return p, sums
        total = b.alloc((P, 1), F32, name="row_sum")
        b.tensor_reduce(
            dst=_acc(total, rows, (0, 1)), op="add", data=_acc(sums, rows, (0, cols)), axis=1, keepdims=True
        )
        return p, total

    def scores(self, q_t, k_t, j: int, t: int, mask):
        """Stage 1 (a generator returning (P, 1/Σ, rows)): S; then the diagonal mask, -max,
        P = exp(...) with row sums, 1/Σ."""
        b = self.b
        parts, mt = yield from self.score_parts(q_t, k_t, j, t, mask)
        rows = (0, mt)
        neg = self.neg_max(parts, mt)
        bias = b.alloc((P, 1), F32, name="exp_bias")
        b.tensor_scalar(
            dst=_acc(bias, rows, (0, 1)),
            data=_acc(neg, rows, (0, 1)),
            op0="multiply",
            operand0=self.scale,
            engine="scalar",
        )
        p, total = self.exps(parts, bias, mt, t * P + mt)
        recip = b.alloc((P, 1), F32, name="recip")
        b.activation(dst=_acc(recip, rows, (0, 1)), op="reciprocal", data=_acc(total, rows, (0, 1)))
        return p, recip, mt

    def probs_values(self, v_nat, p, mt: int, t: int, first: int = 0, last: int | None = None):
        """``O = Σ Pᵀᵀ V`` in PSUM over key chunks ``first`` .. ``last`` (default ``t``, the
        diagonal one) of query tile ``t`` (``p``'s column 0 is key ``first·128``): Pᵀ per chunk by
        TensorE, ``SLOTS`` to a PSUM bank, evacuated by ScalarE and VectorE in turn."""
        b, dv = self.b, self.dv
        rows = (0, mt)
        n_chunks = (t if last is None else last) + 1 - first
        o = b.alloc((P, dv), F32, "psum", name="pv")
        for s0 in range(0, n_chunks, SLOTS):
            sn = min(SLOTS, n_chunks - s0)
            ps = b.alloc((P, SLOTS * P), self.dt, "psum", name="ps_pt")
            pt = b.alloc((P, SLOTS * P), self.dt, name="probs_t")
            kcs = [P if first + c < t else mt for c in range(s0, s0 + sn)]
            for c, kc in zip(range(s0, s0 + sn), kcs):
                b.nc_transpose(dst=_acc(ps, (0, kc), ((c - s0) * P, mt)), data=_acc(p, rows, (c * P, kc)))
            engine = _EVAC[self.evac % len(_EVAC)]
            self.evac += 1
            if mt == P:
                b.tensor_copy(
                    dst=_acc(pt, (0, P), (0, sn * P)), src=_acc(ps, (0, P), (0, sn * P)), engine=engine
                )
            else:  # a short last tile: only its rows' columns and keys were written
                for i, kc in enumerate(kcs):
                    cols = (i * P, mt)
                    b.tensor_copy(dst=_acc(pt, (0, kc), cols), src=_acc(ps, (0, kc), cols), engine=engine)
            for c, kc in zip(range(s0, s0 + sn), kcs):
                b.nc_matmul(
                    dst=_acc(o, rows, (0, dv)),
                    stationary=_acc(pt, (0, kc), ((c - s0) * P, mt)),
                    moving=v_nat.at(kc, first + c, 0),
                    accumulate=c > 0,
                )
        return o

    def values(self, v_nat, unit, j: int, t: int, out):
        """Stage 2 (a generator): Pᵀ per 128-key chunk, O = Σ Pᵀᵀ V in PSUM; then O · 1/Σ into
        ``out[:, j]`` (``out``: a tile, or a ``_Rows`` of O kept on chip, whose row tile t)."""
        p, recip, mt = unit
        rows = (0, mt)
        o = self.probs_values(v_nat, p, mt, t)
        yield  # the next unit's softmax goes here: VectorE reaches it before this multiply
        self.b.tensor_scalar(
            dst=out.at(mt, t, j) if isinstance(out, _Rows) else _acc(out, rows, (j, 1), (0, self.dv)),
            data=_acc(o, rows, (0, self.dv)),
            op0="multiply",
            operand0=_acc(recip, rows, (0, 1)),
            engine=_O_SCALE[self.o_scaled % len(_O_SCALE)] if self.tiles > 1 else _O_SCALE[0],
        )
        self.o_scaled += 1

    # ---- the whole op ------------------------------------------------------------------------
    def emit(self) -> None:
        b = self.b
        self.evac = 0
        self.o_scaled = 0  # units whose O was scaled (engines in turn: _O_SCALE)
        mask = self.mask_tile()
        o_view = self.view(self.o_rows) if self.o_rows is not None else None
        self.q_view, self.k_view, self.v_view = (
            None if rows is None else self._rows_view(rows, n)
            for rows, n in ((self.q_rows, self.m), (self.k_rows, self.n), (self.v_rows, self.n))
        )
        few = self.hk * self.rep * self.tiles <= MAX_UNROLLED_UNITS
        if few or isinstance(self.kept.get(0), list):  # per-KV-head q tiles: g static
            # few units: every KV head in one straight-line block, list-scheduled as a whole,
            # so the next head's loads and transposes fill the previous head's drain; O kept
            # in one tile per KV head: straight-line code too, one block per head
            heads = [range(self.hk)] if few else [[g] for g in range(self.hk)]
            if self.o_keep is not None and self.o_keep.stored:
                give_home(self.ctx, self.o_value, self.o_keep)
            for group in heads:
                block = Block([], [])
                b._blocks.append(block)
                try:
                    for g in group:
                        self.kv_head(g, mask, o_view)
                finally:
                    b._blocks.pop()
                self.order(block)
                for op in list(block):
                    block.remove(op)
                    b._blocks[-1].append(op)
                for g in group:  # the first KV heads' O leaves SBUF as they end
                    if self.o_keep is not None and g < self.o_keep.stored:
                        store_group(self.ctx, self.o_keep, g)
        else:
            with b.fori_loop(0, self.hk) as g:
                self.kv_head(g, mask, o_view)
            self.order(b._blocks[-1].last.body)
        if self.copy_to is not None:
            copy_home(self.ctx, self.tmp_home.reshape(self.copy_to.shape), self.copy_to)

    def order(self, block) -> None:
        """Reorder the emitted ``block`` (the KV heads' work) by the list schedule."""
        list_order(block, self.ctx.target)

    def kv_head(self, g, mask, o_view) -> None:
        """The work of KV head ``g`` (an index or a loop index): loads, Kᵀ, Qᵀ, every unit."""
        b = self.b
        k_nat, v_nat, q_nat = self.load(g)
        k_t = b.alloc((P, self.n), self.dt, name="k_t")
        self.transposed(k_nat, self.chunks, lambda c: min(P, self.n - c * P), k_t, 0)
        q_t = b.alloc((P, self.rep * self.m), self.dt, name="q_t")
        for j in range(self.rep):
            self.transposed(q_nat, self.tiles, lambda t: min(P, self.m - t * P), q_t, j * self.m, head=j)
        outs: dict[int, object] = {}
        # the software pipeline: per step, the scores of unit u+1, the P V of unit u, the
        # softmax of unit u+1, the output of unit u
        pending = None
        for unit in self.units() + [None]:
            nxt = None
            if unit is not None:
                nxt = (unit, self.unit_scores(q_t, k_t, unit, mask))
                next(nxt[1])
            vals = None
            if pending is not None:
                done, res = pending
                pt_ = done[1]
                if self.o_keep is not None:  # over Q of the query head (its Qᵀ read it)
                    outs[pt_] = _Rows(self.o_keep.tiles[g], 0, self.dv)
                elif pt_ not in outs:
                    outs[pt_] = b.alloc((P, self.rep, self.dv), self.dt, name="o_tile")
                vals = self.unit_values(v_nat, res, done, outs[pt_])
                next(vals)
            if nxt is not None:
                nxt = (nxt[0], _finish(nxt[1]))
            if vals is not None:
                _finish(vals)
                if self.ends_tile(done) and self.o_keep is None:
                    mt = min(P, self.m - pt_ * P)
                    heads = _ds(Affine.of(g) * self.rep, self.rep)
                    b.dma_copy(
                        dst=_acc(o_view, (pt_ * P, mt), heads, (0, self.dv)),
                        src=_acc(outs[pt_], (0, mt), (0, self.rep), (0, self.dv)),
                    )
            pending = nxt

    # ---- the units of a KV head (the long-key kernel, causal_attention_long.py, has others) ---
    def units(self) -> list:
        """(query head in the group, query tile) in emission order."""
        return [(j, t) for t in range(self.tiles) for j in range(self.rep)]

    def unit_scores(self, q_t, k_t, unit, mask):
        return self.scores(q_t, k_t, unit[0], unit[1], mask)

    def unit_values(self, v_nat, res, unit, out):
        return self.values(v_nat, res, unit[0], unit[1], out)

    def ends_tile(self, unit) -> bool:
        """The query tile's output is complete after ``unit``."""
        return unit[0] == self.rep - 1
