"""``tensor.grouped_attention`` lowered as one unrolled kernel over query heads and query tiles.

Per query head h (batch index) and query tile of up to 128 rows, with G(h) its KV head:
``S = Q Kᵀ`` into one PSUM bank (the keys fit: N <= ``MAX_KEYS``), ``Y = S + mask/scale`` when
causal (a constant tile per query tile, built once on GpSimd by ``affine_select``), ``-m`` by
one negated row max, ``P = exp(scale·Y - scale·m)`` with its row sum ``l`` fused into the
activation, ``Pᵀ`` by TensorE transposes (fp32, as the program's softmax is fp32), ``O = Pᵀᵀ V``
and ``O · (1/l)`` cast to the output dtype while leaving PSUM. The scores never leave the chip.
16-bit kernels keep every matmul 16-bit: the mask is accumulated into the scores' PSUM bank by an
identity matmul when the dtype carries it (``mask_value_16``), and ``P V`` runs as ``hi V + lo V``
with Pᵀ split into two 16-bit parts as it leaves PSUM (``evacuate_pt``); V stays 16-bit.

Data movement is batched across heads: Kᵀ and V of every KV head are loaded once (``K`` and
``V`` of ``HEADS_PER_DMA`` heads per DMA, keys on the partitions, heads along the free axis;
K transposed on TensorE, V widened to fp32 on GpSimd when ``P V`` is fp32) and shared by all
query heads of its group (GQA never copies K or V); ``Q`` is loaded and ``O`` stored for
``HEADS_PER_DMA`` query heads per DMA. Every tile is a fresh allocation, so the scheduler
overlaps the loads of later heads with the work of earlier ones. With ``causal``, key chunks
after a query tile's last row are skipped (their probabilities are ``exp(mask + scale·s - max)``:
0 unless scores spread over more than ``|mask|``; only done for ``mask <= SKIP_MASK``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import get_dtype
from ...ir.errors import BuildError
from ...nki.builder import Builder
from ...nki.target import TRN2
from ...nki.types import access_of as _acc
from .attention_units import advance, attention_dims
from .deallocs import insert_deallocs
from .emit_order import list_order
from .evacuation import EvacuationBalance
from .grouped_dma_transpose import (
    KV_HEADS_PER_TRANSPOSE,
    Q_HEADS_PER_TRANSPOSE,
    dma_transpose_fits,
    k_source,
    kt_columns,
    load_kt,
    load_qt,
    q_source,
    qt_columns,
)
from .identity_tile import build_identity
from .mask16 import mask_value_16

P = 128  # partitions
MAX_HEAD_DIM = 128  # q / k feature dim on the partitions for Q Kᵀ
MAX_VALUE_DIM = 512  # v feature dim: one PSUM bank of fp32 outputs
MAX_KEYS = 512  # keys: one PSUM bank of fp32 scores per query tile
MAX_UNITS = 64  # query heads x query tiles (the kernel is unrolled)
HEADS_PER_DMA = 2  # heads moved by one DMA (Q, K, V loads and O stores)
SKIP_MASK = -1e4  # causal masks at most this skip the key chunks after a query tile
DTYPES = ("bf16", "f16", "f32")
F32 = get_dtype("f32")
# the bf16 -> fp32 widening of V (SBUF -> SBUF, off the PSUM evacuation engines): GpSimd, which
# has no other work here besides the mask tiles (measured: 16.0 -> 15.5 us for the causal
# GQA against ScalarE)
V_WIDEN_ENGINE = "gpsimd"


@dataclass(frozen=True)
class Unit:
    """One pipelined unit of work: up to 128 queries against one KV head. ``q`` is the Q block
    its transpose reads ([queries, D]), ``out`` the window of the output tile its ``O · 1/l``
    writes, ``g`` the KV head, ``m0`` the first query row of its query tile (``mt`` rows),
    ``mask`` the key of its causal mask tile and ``slot`` its index in that tile's second dim,
    ``store`` the DMA (dst, src) issued when it ends."""

    q: object
    out: object
    g: int
    m0: int
    mt: int
    mask: object
    store: tuple | None
    slot: int = 0


def supported(q_shape, k_shape, v_shape, dtype, attrs) -> bool:
    """Shapes the kernel handles: q (..., H, M, D), k (..., G, N, D), v (..., G, N, Dv) of equal
    ranks >= 3 and equal leading dims, G dividing H, head dim <= 128, value dim <= 512, keys <= 512,
    M == N when causal, at most ``MAX_UNITS`` query heads x query tiles, and a bf16 / f16 / f32
    dtype."""
    dims = attention_dims(q_shape, k_shape, v_shape)
    if dims is None:
        return False
    m, d, n, dv = dims
    qs = tuple(q_shape)
    if d > MAX_HEAD_DIM or dv > MAX_VALUE_DIM or n > MAX_KEYS:
        return False
    if attrs.get("causal") and m != n:
        return False
    if getattr(dtype, "name", dtype) not in DTYPES:
        return False
    return math.prod(qs[:-2]) * -(-m // P) <= MAX_UNITS


class _Kernel:
    """Builds the kernel (module docstring) for one operand signature."""

    def __init__(self, types, attrs, fp32_tail: int = 0, sum_tail: int | None = None):
        qt, kt, vt = types
        self.dt = qt.dtype
        self.heads, self.groups = qt.shape[-3], kt.shape[-3]
        self.m, self.d = qt.shape[-2:]
        self.n, self.dv = vt.shape[-2:]
        self.scale = float(np.float32(attrs["scale"]))  # an fp32 immediate, as the reference multiplies
        self.causal = bool(attrs["causal"])
        self.mask = float(attrs["mask_value"])
        self.hq, self.hk = math.prod(qt.shape[:-2]), math.prod(kt.shape[:-2])
        # Qᵀ and Kᵀ by DMA transposes when the dtype and head dim allow (grouped_dma_transpose.py)
        self.by_dma = dma_transpose_fits(self.dt, self.d, self.m, self.n)
        self.kv_per_dma = KV_HEADS_PER_TRANSPOSE if self.by_dma else HEADS_PER_DMA
        self.b = b = Builder("grouped_attention")
        q = b.add_input("q", qt.shape, self.dt)
        k = b.add_input("k", kt.shape, self.dt)
        v = b.add_input("v", vt.shape, self.dt)
        self.o = b.alloc(qt.shape[:-1] + (self.dv,), self.dt, "hbm", name="o")
        self.make_views(q, k, v)
        self.kt: dict[int, object] = {}  # KV head -> Kᵀ tile [d, n]
        self.vt: dict[int, list] = {}  # KV head -> V chunks (tile, slot) of 128 keys
        self.masks: dict[int, object] = {}
        self.bal = EvacuationBalance(b)
        self.mask_off = float(np.float32(self.mask / self.scale))
        self.fast = self.dt is not F32  # 16-bit copies out of PSUM: VectorE's 2x mode
        # the causal mask added in PSUM by a TensorE matmul (identity x 16-bit mask tile) when
        # 16 bits carry it (mask_value_16), else by a VectorE add in fp32
        self.mask_16 = self.mask_value_16()
        self.mask_dt = F32 if self.mask_16 is None else self.dt
        self.mask_fill = self.mask_off if self.mask_16 is None else self.mask_16
        self.ident = None
        # 16-bit kernels: Pᵀ V as two 16-bit matmuls of Pᵀ's hi and lo parts (evacuate_pt); V
        # stays 16-bit
        self.split = self.fast
        # the last ``fp32_tail`` unit groups of a 16-bit kernel: one fp32 Pᵀ V instead (grouped_fp32_tail.py)
        self.fp32_tail = fp32_tail if self.split else 0
        # with ``sum_tail`` set, the unit groups before the last ``sum_tail`` take each row's sum
        # of P from ``Pᵀ V`` (a column of ones appended to V, ``v_tile``) instead of the exp's
        # accumulator, which costs ScalarE 64 cycles per exp (grouped_fp32_tail.py); 16-bit
        # kernels whose pair of slots' outputs and sums fit one PSUM bank
        fits = 2 * (self.dv + 1) * F32.itemsize <= TRN2.psum_bank_bytes
        self.sum_tail = sum_tail if self.split and fits else None
        self.v32: dict[int, object] = {}  # id of a 16-bit V tile -> its fp32 copy (``widened``)

    def make_views(self, q, k, v) -> None:
        """Rows (keys) on the partitions, heads along the free axis: one DMA moves several heads."""
        b, m, n, d, dv = self.b, self.m, self.n, self.d, self.dv
        self.qv = b.hbm_view(q, (m, self.hq, d), (d, m * d, 1), name="q_rows")
        self.kv = b.hbm_view(k, (n, self.hk, d), (d, n * d, 1), name="k_rows")
        self.vv = b.hbm_view(v, (n, self.hk, dv), (dv, n * dv, 1), name="v_rows")
        self.ov = b.hbm_view(self.o, (m, self.hq, dv), (dv, m * dv, 1), name="o_rows")
        if self.by_dma:
            self.k_src = k_source(b, k, self.hk, n, d)
            self.q_src = q_source(b, q, self.hq, m, d)

    def kv_head(self, h: int) -> int:
        """The (flat) KV head the (flat) query head ``h`` reads."""
        rep = self.heads // self.groups
        return (h // self.heads) * self.groups + (h % self.heads) // rep

    def kv_group(self, g: int) -> int:
        """The first KV head of the load group of KV head ``g``."""
        return g - g % self.kv_per_dma

    # ---- K / V: loaded once per KV head, kv_per_dma heads per DMA -------------------------------
    def load_kv(self, g0: int) -> None:
        """DMAs of K and V for KV heads [g0, g0 + kv_per_dma): keys on the partitions (K
        transposed on the way when ``by_dma``)."""
        b, d, dv, n = self.b, self.d, self.dv, self.n
        hk = min(self.kv_per_dma, self.hk - g0)
        kt = load_kt(b, self.k_src, g0, hk, n, self.dt) if self.by_dma else None
        chunks = []
        for c0 in range(0, n, P):
            kc = min(P, n - c0)
            kn = None
            if not self.by_dma:
                kn = b.alloc((P, hk, d), self.dt, name="k_nat")
                b.dma_copy(
                    dst=_acc(kn, (0, kc), (0, hk), (0, d)), src=_acc(self.kv, (c0, kc), (g0, hk), (0, d))
                )
            vn = self.v_tile(hk, kc)
            v_dma = (_acc(vn, (0, kc), (0, hk), (0, dv)), _acc(self.vv, (c0, kc), (g0, hk), (0, dv)))
            self.v_dmas.append(v_dma)  # issued after the next Q load: V is needed last
            chunks.append((c0, kc, kn, vn))
        self.kv_loaded[g0] = (hk, chunks, kt)

    def prepare_kv(self, g: int) -> None:
        """Kᵀ (TensorE transposes) and fp32 V of the DMA group holding KV head ``g``, once."""
        if g in self.kt:
            return
        b, d, n = self.b, self.d, self.n
        g0 = self.kv_group(g)
        hk, chunks, kt = self.kv_loaded[g0]
        for j in range(hk):
            self.kt[g0 + j] = (kt, j) if self.by_dma else b.alloc((P, n), self.dt, name="k_t")
            self.vt[g0 + j] = []
        for c0, kc, kn, vn in chunks:
            if not self.split and self.dt is not F32:  # an fp32 Pᵀ V: V widened on chip (exact)
                vn = self.widened(vn, kc)
            for j in range(hk):
                self.vt[g0 + j].append((vn, j, kc))
                if self.by_dma:
                    continue
                ps = b.alloc((P, P), self.dt, "psum", name="ps_k")
                b.nc_transpose(dst=_acc(ps, (0, d), (0, kc)), data=_acc(kn, (0, kc), (j, 1), (0, d)))
                b.tensor_copy(
                    dst=_acc(self.kt[g0 + j], (0, d), (c0, kc)),
                    src=_acc(ps, (0, d), (0, kc)),
                    engine=self.bal.engine(kc, self.fast),
                )

    def mask_tile(self, us: list[Unit], keys: int):
        """The causal mask of the query tile of ``us``: ``mask_off`` where key > query (absolute
        rows m0 + p), 0 elsewhere, once per query tile, as a (P, 1, keys) tile (one slot)."""
        m0, mt = us[0].m0, us[0].mt
        if m0 not in self.masks:
            b = self.b
            t = b.alloc((P, 1, keys), self.mask_dt, name="causal_bias")
            w = _acc(t, (0, mt), (0, 1), (0, keys))
            b.memset(dst=w, value=0.0, engine="gpsimd")
            # keep where key - (m0 + p) <= 0
            b.affine_select(
                dst=w,
                pattern=[[1, keys]],
                channel_multiplier=-1,
                on_true_tile=w,
                on_false_value=self.mask_fill,
                cmp_op="less_equal",
                offset=-m0,
            )
            self.masks[m0] = t
        return self.masks[m0]

    def mask_value_16(self) -> float | None:
        """The value of the masked entries in a 16-bit mask tile, or None when the mask is added
        in fp32 instead (fp32 kernels; mask16.py)."""
        return mask_value_16(self.mask_off, self.mask <= SKIP_MASK, self.dt) if self.fast else None

    def identity(self):
        """The 16-bit identity [P, P] the mask matmul's stationary operand reads (GpSimd, once)."""
        if self.ident is None:
            self.ident = build_identity(self.b, self.dt)
        return self.ident

    def v_tile(self, heads: int, kc: int):
        """A V tile [P, heads, dv] for ``kc`` keys; with ``sum_tail`` set, one more column of ones
        (a GpSimd memset), so that ``Pᵀ V`` also gives each row's sum of P in column dv."""
        b, dv = self.b, self.dv
        if self.sum_tail is None:
            return b.alloc((P, heads, dv), self.dt, name="v_nat")
        vn = b.alloc((P, heads, dv + 1), self.dt, name="v_nat")
        b.memset(dst=_acc(vn, (0, kc), (0, heads), (dv, 1)), value=1.0, engine="gpsimd")
        return vn

    def widened(self, vn, kc: int):
        """The fp32 copy of the 16-bit V tile ``vn`` (its first ``kc`` keys) for an fp32 ``Pᵀ V``
        (exact), made once, on ``V_WIDEN_ENGINE``."""
        v32 = self.v32.get(id(vn))
        if v32 is None:
            shape = vn.type.shape
            v32 = self.v32[id(vn)] = self.b.alloc(shape, F32, name="v_f32")
            win = ((0, kc),) + tuple((0, x) for x in shape[1:])
            self.b.tensor_copy(dst=_acc(v32, *win), src=_acc(vn, *win), engine=V_WIDEN_ENGINE)
        return v32

    def evacuate_pt(self, ps_t, kc: int, rows, split: bool) -> list:
        """Pᵀ (fp32, PSUM) out to SBUF as the stationary operands of ``Pᵀ V``: one fp32 tile, or
        for 16-bit kernels (``self.split``) the pair ``hi = 16-bit(Pᵀ)`` (a copy on the emptier
        of VectorE / ScalarE) and ``lo = 16-bit(Pᵀ − hi)`` (VectorE, one input in PSUM), so that
        ``P V = hi V + lo V`` runs as two 16-bit matmuls instead of one fp32 matmul (4x the
        cycles, docs/costmodel.md). V is exact in 16 bits; ``hi + lo`` carries 16 (bf16) or 22
        (f16) significant bits of P, an error of at most 2^-16 of P, far below the output
        dtype's rounding. ``split`` False: one fp32 tile (``fp32_tail`` units of a 16-bit kernel)."""
        b = self.b
        src = _acc(ps_t, (0, kc), rows)
        if not split:
            p_t = b.alloc((P, P), F32, name="probs_t")
            b.tensor_copy(dst=_acc(p_t, (0, kc), rows), src=src, engine=self.bal.engine(rows[1]))
            return [p_t]
        hi = b.alloc((P, P), self.dt, name="probs_t_hi")
        b.tensor_copy(dst=_acc(hi, (0, kc), rows), src=src, engine=self.bal.engine(rows[1]))
        lo = b.alloc((P, P), self.dt, name="probs_t_lo")
        b.tensor_tensor(dst=_acc(lo, (0, kc), rows), data1=src, data2=_acc(hi, (0, kc), rows), op="subtract")
        return [hi, lo]

    # ---- one query head of one query tile, as pipeline stages -----------------------------------
    def k_moving(self, g: int, keys: int):
        """Kᵀ of KV head ``g`` over its first ``keys`` keys: the score matmul's moving operand."""
        if self.by_dma:
            return kt_columns(*self.kt[g], keys)
        return _acc(self.kt[g], (0, self.d), (0, keys))

    def q_stationary(self, us: list[Unit]):
        """Qᵀ of units ``us`` (the score matmuls' stationary operands), as pipeline stages: the
        DMA-transposed ``u.q`` (``by_dma``), else TensorE transposes into PSUM and one copy out."""
        if self.by_dma:
            return [u.q for u in us]
        b, d, r = self.b, self.d, len(us)
        rows, slots = (0, us[0].mt), (0, r)
        ps_q = b.alloc((P, r, P), self.dt, "psum", name="ps_q")
        for x, u in enumerate(us):
            b.nc_transpose(dst=_acc(ps_q, (0, d), (x, 1), rows), data=u.q)
        yield
        q_t = b.alloc((P, r, P), self.dt, name="q_t")
        b.tensor_copy(
            dst=_acc(q_t, (0, d), slots, rows),
            src=_acc(ps_q, (0, d), slots, rows),
            engine=self.bal.engine(r * us[0].mt, self.fast),
        )
        yield
        return [_acc(q_t, (0, d), (x, 1), rows) for x in range(r)]

    def value_products(self, chunks, p_ts, rows, r: int, split: bool, by_pv: bool) -> list:
        """``O = P V`` of each of ``r`` slots into PSUM over the key ``chunks`` (Pᵀ parts ``p_ts``:
        hi / lo when ``split``, else fp32 against V widened in a 16-bit kernel); the slots' O
        windows, which with ``by_pv`` lie in one PSUM tile whose column dv holds the row sums."""
        b, dv = self.b, self.dv
        pvs = []
        w = dv + 1 if by_pv else dv  # with V's ones column: O and the row sum l
        pv_all = b.alloc((P, r, w), F32, "psum", name="pv") if by_pv else None
        for x in range(r):
            if by_pv:
                dst = _acc(pv_all, rows, (x, 1), (0, w))
            else:
                dst = _acc(b.alloc((P, dv), F32, "psum", name="pv"), rows, (0, dv))
            first = True
            for c, (vn, slot, kc) in enumerate(chunks):
                if self.split and not split:  # an fp32 Pᵀ V in a 16-bit kernel
                    vn = self.widened(vn, kc)
                for part in p_ts[x, c]:
                    b.nc_matmul(
                        dst=dst,
                        stationary=_acc(part, (0, kc), rows),
                        moving=_acc(vn, (0, kc), (slot, 1), (0, w)),
                        accumulate=not first,
                    )
                    first = False
            pvs.append(_acc(pv_all, rows, (x, 1), (0, dv)) if by_pv else dst)
        return pvs

    def head(self, us: list[Unit], split: bool, by_pv: bool = False):
        """Emit the instructions of units ``us`` (one KV head, one query tile; ``r`` slots side
        by side in each tile, so the column steps -- exp bias, 1/l -- are one instruction for
        all of them) one stage per ``next()`` (see ``build``); ``Pᵀ V`` as hi / lo 16-bit
        matmuls when ``split``, else one fp32 matmul (V widened for a 16-bit kernel). ``by_pv``:
        the exp accumulates no row sum; the slots' ``Pᵀ V`` share one PSUM tile whose column dv
        (V's ones column) is the row sum l of the P the products used (hi + lo: within 2^-16
        of the exp's fp32 sum), and 1/l is taken from there after the products."""
        b, dv, r = self.b, self.dv, len(us)
        g, m0, mt = us[0].g, us[0].m0, us[0].mt
        keys = self.n
        if self.causal and self.mask <= SKIP_MASK:
            keys = min(self.n, -(-(m0 + mt) // P) * P)
        kst = keys if r * keys <= MAX_KEYS else MAX_KEYS  # a slot's scores stay in one PSUM bank
        rows, col, slots = (0, mt), (0, 1), (0, r)
        self.prepare_kv(g)
        mask = self.mask_tile(us, keys) if self.causal else None
        q_stat = yield from self.q_stationary(us)
        s = b.alloc((P, r, kst), F32, "psum", name="scores")
        # the mask matmuls first: they wait for no load, so TensorE runs them while Q and K
        # are in flight and the scores accumulate onto them (the same fp32 sum either way)
        mask_mm = mask is not None and self.mask_16 is not None
        if mask_mm:
            ident = self.identity()
            for x, u in enumerate(us):
                b.nc_matmul(
                    dst=_acc(s, rows, (x, 1), (0, keys)),
                    stationary=_acc(ident, rows, rows),
                    moving=_acc(mask, rows, (u.slot, 1), (0, keys)),
                )
        for x in range(r):
            b.nc_matmul(
                dst=_acc(s, rows, (x, 1), (0, keys)),
                stationary=q_stat[x],
                moving=self.k_moving(g, keys),
                accumulate=mask_mm,
            )
        s_acc = _acc(s, rows, slots, (0, keys))
        yield
        if mask is not None and not mask_mm:
            y = b.alloc((P, r, kst), F32, name="scores_masked")
            y_acc = _acc(y, rows, slots, (0, keys))
            m_acc = _acc(mask, rows, (us[0].slot, r), (0, keys))
            b.tensor_tensor(dst=y_acc, data1=s_acc, data2=m_acc, op="add")
            s, s_acc = y, y_acc
            yield
        neg = b.alloc((P, r, 1), F32, name="neg_max")
        b.tensor_reduce(
            dst=_acc(neg, rows, slots, col), op="maximum", data=s_acc, axis=2, negate=True, keepdims=True
        )
        yield
        bias = b.alloc((P, r, 1), F32, name="exp_bias")
        b.tensor_scalar(
            dst=_acc(bias, rows, slots, col),
            data=_acc(neg, rows, slots, col),
            op0="multiply",
            operand0=self.scale,
            engine="scalar",
        )
        yield
        p = b.alloc((P, r, kst), F32, name="probs")
        total = None if by_pv else b.alloc((P, r, 1), F32, name="row_sum")
        for x in range(r):
            b.activation(
                dst=_acc(p, rows, (x, 1), (0, keys)),
                op="exp",
                data=_acc(s, rows, (x, 1), (0, keys)),
                bias=_acc(bias, rows, (x, 1), col),
                scale=self.scale,
                reduce_res=None if by_pv else _acc(total, rows, (x, 1), col),
            )
        yield
        recip = b.alloc((P, r, 1), F32, name="recip")
        if not by_pv:
            b.activation(
                dst=_acc(recip, rows, slots, col), op="reciprocal", data=_acc(total, rows, slots, col)
            )
        chunks = self.vt[g][: -(-keys // P)]
        transposed = []
        for x in range(r):
            for c, (_vn, _slot, kc) in enumerate(chunks):
                ps_t = b.alloc((P, P), F32, "psum", name="ps_pt")
                b.nc_transpose(dst=_acc(ps_t, (0, kc), rows), data=_acc(p, rows, (x, 1), (c * P, kc)))
                transposed.append((x, c, ps_t))
        yield
        yield  # one tick more before the copy: the fp32 transposes take a while
        p_ts = {}
        for x, c, ps_t in transposed:
            p_ts[x, c] = self.evacuate_pt(ps_t, chunks[c][2], rows, split)
        yield
        pvs = self.value_products(chunks, p_ts, rows, r, split, by_pv)
        yield
        if by_pv:  # the row sums: column dv of the products (V's ones column)
            l_acc = _acc(pvs[0].tensor, rows, slots, (dv, 1))
            b.activation(dst=_acc(recip, rows, slots, col), op="reciprocal", data=l_acc)
            yield
        # one engine for the slots: they write one output tile, and a write after another
        # engine's write waits for its drain (perf/latency.py)
        eng = self.bal.engine(r * dv)
        for x, (u, pv) in enumerate(zip(us, pvs)):
            b.tensor_scalar(
                dst=u.out,
                data=pv,
                op0="multiply",
                operand0=_acc(recip, rows, (x, 1), col),
                engine=eng,
            )

    def plan_units(self) -> list[Unit]:
        """Emit the Q loads (with the K loads each needs and the V loads of the previous group
        after it) and return the units in pipeline order: per query tile, ``HEADS_PER_DMA``
        query heads per Q load and output tile."""
        b, d, dv = self.b, self.d, self.dv
        units = []
        q_heads = Q_HEADS_PER_TRANSPOSE if self.by_dma else HEADS_PER_DMA
        for m0 in range(0, self.m, P):
            mt = min(P, self.m - m0)
            for h0 in range(0, self.hq, q_heads):
                hn = min(q_heads, self.hq - h0)
                if self.by_dma:
                    q_t = load_qt(b, self.q_src, h0, hn, m0 // 16, mt // 16, self.dt)
                else:
                    q_nat = b.alloc((P, hn, d), self.dt, name="q_nat")
                    b.dma_copy(
                        dst=_acc(q_nat, (0, mt), (0, hn), (0, d)),
                        src=_acc(self.qv, (m0, mt), (h0, hn), (0, d)),
                    )
                self.flush_v()
                for g0 in sorted({self.kv_group(self.kv_head(h)) for h in range(h0, h0 + hn)}):
                    if g0 not in self.kv_loaded:
                        self.load_kv(g0)
                out = b.alloc((P, hn, dv), self.dt, name="out")
                store = (_acc(self.ov, (m0, mt), (h0, hn), (0, dv)), _acc(out, (0, mt), (0, hn), (0, dv)))
                for j in range(hn):
                    units.append(
                        Unit(
                            q=qt_columns(q_t, j, 1, mt // 16)
                            if self.by_dma
                            else _acc(q_nat, (0, mt), (j, 1), (0, d)),
                            out=_acc(out, (0, mt), (j, 1), (0, dv)),
                            g=self.kv_head(h0 + j),
                            m0=m0,
                            mt=mt,
                            mask=m0,
                            store=store if j == hn - 1 else None,
                        )
                    )
        return units

    def unit_groups(self, units: list[Unit]) -> list[list[Unit]]:
        """Units run together by one ``head`` (here: each alone)."""
        return [[u] for u in units]

    def flush_v(self) -> None:
        """Issue the V loads held back so far (V is needed last: after the next Q load)."""
        for dst, src in self.v_dmas:
            self.b.dma_copy(dst=dst, src=src)
        self.v_dmas = []

    def build(self):
        """All loads first (they wait on nothing), then the units as a software pipeline: each
        tick starts the next unit and advances every running unit by one stage, so the engines'
        in-order streams interleave the stages of consecutive units; an output tile is stored
        when its last unit is done."""
        b = self.b
        self.kv_loaded: dict[int, tuple] = {}
        self.v_dmas: list = []
        units = self.plan_units()
        self.flush_v()
        running = []
        groups = self.unit_groups(units)
        for i, us in enumerate(groups):
            split = self.split and i < len(groups) - self.fp32_tail
            by_pv = self.sum_tail is not None and i < len(groups) - self.sum_tail
            running.append((self.head(us, split, by_pv), us[-1].store))
            running = advance(b, running)
        while running:
            running = advance(b, running)
        b.set_outputs({"o": self.o})
        list_order(b.graph.body, TRN2)
        insert_deallocs(b.graph.body)
        return b.graph


def check_operands(types, attrs) -> None:
    """One BuildError naming the op and the rule when the kernel cannot take ``types``."""
    qt, kt, vt = types
    if not (qt.dtype is kt.dtype is vt.dtype) or not supported(qt.shape, kt.shape, vt.shape, qt.dtype, attrs):
        shapes = ", ".join(f"{n} {t}" for n, t in zip("qkv", types))
        raise BuildError(
            f"tensor.grouped_attention ({shapes}): the kernel takes q (..., H, M, D), k (..., G, N, D), "
            f"v (..., G, N, Dv) of one dtype ({'/'.join(DTYPES)}), equal leading dims, G dividing H, "
            f"D <= {MAX_HEAD_DIM}, Dv <= {MAX_VALUE_DIM}, N <= {MAX_KEYS}, M == N when causal, and at "
            f"most {MAX_UNITS} query heads x 128-row query tiles"
        )
