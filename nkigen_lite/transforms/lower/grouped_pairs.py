"""``tensor.grouped_attention`` with row pairs: Q, K and O moved with two rows per partition.

A head's row of 128 bf16 elements is 256 B, a DMA descriptor size the cost model (and the
hardware guide: "< 256 B severely overhead-bound") charges at 0.41 of the engines' rate. When
every KV head serves an even number of query heads and the query and key counts are multiples
of 128, two query heads of one KV group, ``h`` and ``h + 1`` (adjacent in HBM), share one unit
of 128 queries: partition ``p`` holds rows ``m0 + 2i`` and ``m0 + 2i + 1`` of head
``h + p // 64`` (``i = p % 64``), 512 contiguous bytes, and the unit of slot ``j`` (0 or 1)
computes the queries ``m0 + 2i + j``. Both heads read the same K and V, so one score matmul, one
``Pᵀ V`` product and one ``O`` tile serve both; the output tile has the load's layout and is
stored with 512-byte descriptors too.

K moves the same way for a pair of KV heads ``g``, ``g + 1``: partition ``p`` holds keys
``c0 + 2i``, ``c0 + 2i + 1`` of head ``g + p // 64``. The transpose of slot ``j`` gives Kᵀ
columns of keys ``c0 + 2i + j`` of both heads; their copies out of PSUM assemble each head's
Kᵀ chunk in the key order ``(j, i) -> c0 + 2i + j``. V is loaded (256-byte rows) in that same
key order, so ``Pᵀ`` (whose partitions follow the score columns) pairs with it; the softmax
does not see the order. The causal mask tile of a slot is built for these query rows and key
columns: per 64-partition half, one GpSimd ``affine_select`` with channel multiplier 2 and the
key pattern ``[[128, chunks], [1, 2], [2, 64]]``.

The two slots of a head pair run as one pipelined group (``unit_groups``): their scores share
one PSUM bank (so ``2 N <= MAX_KEYS``), the fp32 mask add (when the mask is not a matmul), row
max, exp bias and ``1/l`` are one instruction for both, and both ``O · 1/l`` evacuations go to
one engine (they write one output tile; a write after another engine's write waits for its
drain). Everything else -- the
per-unit chain, the pipeline, the list-scheduled order -- is ``grouped_attention``'s. The op's
registered lowering (``grouped_attention_body``) lives here: it picks this variant or the
one-head units of grouped_attention.py.
"""

from __future__ import annotations

import numpy as np

from ...nki.types import access_of as _acc
from ...tensor.composites_grouped_attention import GroupedAttentionOp
from .custom import register_composite_lowering
from .grouped_attention import F32, HEADS_PER_DMA, MAX_KEYS, V_WIDEN_ENGINE, P, Unit, _Kernel, check_operands
from .grouped_dma_transpose import (
    PAIRS_PER_STORE,
    Q_HEADS_PER_TRANSPOSE,
    k_source,
    load_qt,
    q_source,
    qt_columns,
)
from .grouped_fp32_tail import build_shortest

HALF = P // 2  # queries (or keys) of one head in a 128-partition tile
PAIRS_PER_DMA = HEADS_PER_DMA // 2 or 1  # head pairs per Q load / O store and per K load


def pairs_supported(q_shape, k_shape) -> bool:
    """Row pairs apply when each KV head serves an even number of query heads, the KV head
    count (batch dims included) is even, the query and key counts are multiples of 128 and the
    scores of a unit pair fit one PSUM bank (2 N <= MAX_KEYS; beyond, the pairs measured slower
    than single units)."""
    heads, groups = q_shape[-3], k_shape[-3]
    hk = int(np.prod(k_shape[:-2]))
    m, n = q_shape[-2], k_shape[-2]
    return (heads // groups) % 2 == 0 and hk % 2 == 0 and m % P == 0 and n % P == 0 and 2 * n <= MAX_KEYS


class PairKernel(_Kernel):
    """``_Kernel`` with units of two query heads' interleaved rows (module docstring)."""

    def make_views(self, q, k, v) -> None:
        """(head in pair, row pair i, pair, row in pair j, feature): partition = (head, i); V in
        the key order of the assembled Kᵀ: partition (j, i) holds key 2i + j."""
        b, m, n, d, dv, hq, hk = self.b, self.m, self.n, self.d, self.dv, self.hq, self.hk
        self.qp = b.hbm_view(q, (2, m // 2, hq // 2, 2, d), (m * d, 2 * d, 2 * m * d, d, 1), name="q_pairs")
        self.op = b.hbm_view(
            self.o, (2, m // 2, hq // 2, 2, dv), (m * dv, 2 * dv, 2 * m * dv, dv, 1), name="o_pairs"
        )
        self.kp = b.hbm_view(k, (2, n // 2, hk // 2, 2, d), (n * d, 2 * d, 2 * n * d, d, 1), name="k_pairs")
        self.vp = b.hbm_view(v, (2, n // 2, hk, dv), (dv, 2 * dv, n * dv, 1), name="v_perm")
        if self.by_dma:  # Kᵀ and V in natural key order, Qᵀ of each slot (grouped_dma_transpose.py)
            self.k_src = k_source(b, k, hk, n, d)
            self.vv = b.hbm_view(v, (n, hk, dv), (dv, n * dv, 1), name="v_rows")
            self.q_srcs = [q_source(b, q, hq, m, d, step=2, first=j) for j in range(2)]

    # ---- K / V ------------------------------------------------------------------------------
    def load_kv(self, g0: int) -> None:
        """K of the KV head pairs from ``g0`` (row pairs) and V of those heads (key order j, i)."""
        if self.by_dma:
            return super().load_kv(g0)
        b, d, dv, n = self.b, self.d, self.dv, self.n
        npr = min(PAIRS_PER_DMA, (self.hk - g0) // 2)
        pr0 = g0 // 2
        chunks = []
        for c0 in range(0, n, P):
            kn = b.alloc((P, npr, 2, d), self.dt, name="k_nat")
            b.dma_copy(
                dst=_acc(kn, (0, P), (0, npr), (0, 2), (0, d)),
                src=_acc(self.kp, (0, 2), (c0 // 2, HALF), (pr0, npr), (0, 2), (0, d)),
            )
            vn = self.v_tile(2 * npr, P)
            v_dma = (
                _acc(vn, (0, P), (0, 2 * npr), (0, dv)),
                _acc(self.vp, (0, 2), (c0 // 2, HALF), (g0, 2 * npr), (0, dv)),
            )
            self.v_dmas.append(v_dma)
            chunks.append((c0, kn, vn))
        self.kv_loaded[g0] = (npr, chunks)

    def kv_group(self, g: int) -> int:
        if self.by_dma:
            return super().kv_group(g)
        return g - g % (2 * PAIRS_PER_DMA)

    def prepare_kv(self, g: int) -> None:
        """Kᵀ of the KV heads loaded with ``g`` (two transposes per head pair and key chunk,
        copies assembling each head's key order) and their V widened to fp32 when needed."""
        if self.by_dma:
            return super().prepare_kv(g)
        if g in self.kt:
            return
        b, d, dv, n = self.b, self.d, self.dv, self.n
        g0 = self.kv_group(g)
        npr, chunks = self.kv_loaded[g0]
        for x in range(2 * npr):
            self.kt[g0 + x] = b.alloc((P, n // P, 2, HALF), self.dt, name="k_t")
            self.vt[g0 + x] = []
        for c0, kn, vn in chunks:
            if not self.split and self.dt is not F32:  # an fp32 Pᵀ V: V widened on chip (exact)
                v32 = b.alloc((P, 2 * npr, dv), F32, name="v_f32")
                b.tensor_copy(
                    dst=_acc(v32, (0, P), (0, 2 * npr), (0, dv)),
                    src=_acc(vn, (0, P), (0, 2 * npr), (0, dv)),
                    engine=V_WIDEN_ENGINE,
                )
                vn = v32
            for pr in range(npr):
                ps = b.alloc((P, 2, P), self.dt, "psum", name="ps_k")
                for j in range(2):
                    b.nc_transpose(
                        dst=_acc(ps, (0, d), (j, 1), (0, P)), data=_acc(kn, (0, P), (pr, 1), (j, 1), (0, d))
                    )
                for gh in range(2):
                    g1 = g0 + 2 * pr + gh
                    b.tensor_copy(
                        dst=_acc(self.kt[g1], (0, d), (c0 // P, 1), (0, 2), (0, HALF)),
                        src=_acc(ps, (0, d), (0, 2), (gh * HALF, HALF)),
                        engine=self.bal.engine(P, self.fast),
                    )
            for x in range(2 * npr):
                self.vt[g0 + x].append((vn, x, P))

    def k_moving(self, g: int, keys: int):
        if self.by_dma:
            return super().k_moving(g, keys)
        return _acc(self.kt[g], (0, self.d), (0, keys // P), (0, 2), (0, HALF))

    # ---- masks ------------------------------------------------------------------------------
    def mask_tile(self, us: list[Unit], keys: int):
        """mask/scale where key > query for both slots of query tile ``m0``: in slot ``j``,
        partition ``p`` is row ``m0 + 2 (p % 64) + j`` and column ``128 c + 64 j' + i'`` is key
        ``128 c + 2 i' + j'`` (with ``by_dma``, column ``c`` is key ``c``); a (P, 2, keys) tile,
        slot ``j`` at ``[:, j]``."""
        m0 = us[0].m0
        if m0 not in self.masks:
            b = self.b
            t = b.alloc((P, 2, keys), self.mask_dt, name="causal_bias")
            b.memset(dst=_acc(t, (0, P), (0, 2), (0, keys)), value=0.0, engine="gpsimd")
            for j in range(2):
                for half in range(2):
                    w = _acc(t, (half * HALF, HALF), (j, 1), (0, keys))
                    # keep where key - row = (128 c + j' + 2 i') - 2 p - (m0 + j) <= 0
                    b.affine_select(
                        dst=w,
                        pattern=[[1, keys]] if self.by_dma else [[P, keys // P], [1, 2], [2, HALF]],
                        channel_multiplier=-2,
                        on_true_tile=w,
                        on_false_value=self.mask_fill,
                        cmp_op="less_equal",
                        offset=-(m0 + j),
                    )
            self.masks[m0] = t
        return self.masks[m0]

    def unit_groups(self, units: list[Unit]) -> list[list[Unit]]:
        """The two slots of a head pair run together (their column steps in one instruction;
        both slots' scores fit one PSUM bank: ``pairs_supported``)."""
        return [units[i : i + 2] for i in range(0, len(units), 2)]

    # ---- units ------------------------------------------------------------------------------
    def plan_units(self) -> list[Unit]:
        """Per query tile and group of head pairs: one Q load (row pairs; with ``by_dma`` one Qᵀ
        transpose per slot), the K loads it needs, two units per head pair (slots j = 0, 1) and
        output tiles stored after their last unit (one per Q load; ``PAIRS_PER_STORE`` head pairs
        each with ``by_dma``).
        The V loads are issued after every Q and K load (``build``'s final ``flush_v``): V is
        needed only by ``Pᵀ V``, and with the loads transfer-bound the earlier Q and K give the
        Tensor engine its transposes and score matmuls sooner (measured on the issue's causal
        GQA: 15.5 -> 15.1 us against V after the next Q load)."""
        b, d, dv = self.b, self.d, self.dv
        units = []
        npairs = self.hq // 2
        per_load = Q_HEADS_PER_TRANSPOSE // 2 if self.by_dma else PAIRS_PER_DMA
        for m0 in range(0, self.m, P):
            for pr0 in range(0, npairs, per_load):
                npr = min(per_load, npairs - pr0)
                if self.by_dma:  # Qᵀ of each slot j: columns 64 hh + ii = row m0 + 2 ii + j
                    q_ts = [load_qt(b, src, 2 * pr0, 2 * npr, m0 // 32, 4, self.dt) for src in self.q_srcs]
                else:
                    q_nat = b.alloc((P, npr, 2, d), self.dt, name="q_nat")
                    b.dma_copy(
                        dst=_acc(q_nat, (0, P), (0, npr), (0, 2), (0, d)),
                        src=_acc(self.qp, (0, 2), (m0 // 2, HALF), (pr0, npr), (0, 2), (0, d)),
                    )
                for g0 in sorted({self.kv_group(self.kv_head(2 * pr)) for pr in range(pr0, pr0 + npr)}):
                    if g0 not in self.kv_loaded:
                        self.load_kv(g0)
                per_store = PAIRS_PER_STORE if self.by_dma else npr  # head pairs per output tile
                for pr in range(npr):
                    if pr % per_store == 0:
                        ns = min(per_store, npr - pr)
                        out = b.alloc((P, ns, 2, dv), self.dt, name="out")
                        store = (
                            _acc(self.op, (0, 2), (m0 // 2, HALF), (pr0 + pr, ns), (0, 2), (0, dv)),
                            _acc(out, (0, P), (0, ns), (0, 2), (0, dv)),
                        )
                    for j in range(2):
                        last = (pr % per_store == per_store - 1 or pr == npr - 1) and j == 1
                        units.append(
                            Unit(
                                q=qt_columns(q_ts[j], 2 * pr, 2, 4)
                                if self.by_dma
                                else _acc(q_nat, (0, P), (pr, 1), (j, 1), (0, d)),
                                out=_acc(out, (0, P), (pr % per_store, 1), (j, 1), (0, dv)),
                                g=self.kv_head(2 * (pr0 + pr)),
                                m0=m0,
                                mt=P,
                                mask=m0,
                                slot=j,
                                store=store if last else None,
                            )
                        )
        return units


def grouped_attention_body(types, attrs):
    """The NKI kernel of one ``tensor.grouped_attention`` with operand types ``types``: row
    pairs when ``pairs_supported``, else one query head per unit (grouped_attention.py); the
    last unit groups with an fp32 ``Pᵀ V`` as grouped_fp32_tail.py chooses."""
    check_operands(types, attrs)
    kernel = PairKernel if pairs_supported(types[0].shape, types[1].shape) else _Kernel
    return build_shortest(kernel, types, attrs)


register_composite_lowering(GroupedAttentionOp, grouped_attention_body)
