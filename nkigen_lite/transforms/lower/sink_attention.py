"""``tensor.sink_attention`` lowered as one unrolled kernel: causal (optionally sliding-window)
grouped-query attention whose softmax also counts a per-head sink logit.

**Layout.** ``r`` (4, 2 or 1: the largest dividing the query heads per KV head, 1 unless the
rows are a multiple of 128) consecutive query heads of one KV head share each 128-partition
tile: head ``j`` of the block on partitions ``j·128/r ...``, each partition holding ``r``
consecutive rows of its head, so the Q loads and O stores move runs of ``r·D`` elements per
descriptor instead of one row. A *unit* is one such head block, one 128-row query tile and one
row offset ``ri < r``: its 128 queries are row ``m0 + r·p + ri`` of head ``j`` on partition
``j·128/r + p``, all reading the same KV head, so one ``S = Q Kᵀ`` matmul covers them. With an
even number of KV heads and D of 32 or 64, two KV heads share the partitions of Qᵀ and Kᵀ
(head ``i`` on partitions ``i·D ...``): one transpose and one copy serve both.

**Per block (r units):** Qᵀ by one TensorE transpose per row offset (one PSUM bank, one copy
out, shared with the paired KV head's block); ``S = Qᵀᵀ Kᵀ`` over the key chunks some query sees
(chunks every query of the block cannot see — after the diagonal, or before the window — are
skipped); on the chunks only partly visible the mask is added by the Tensor engine itself,
accumulating ``I · M`` into the scores (``M`` holds 0 or ``MASKED``; one constant tile per chunk
offset, built by GpSimd ``affine_select`` per head block, whose rows are affine in the
partition); ``-max S`` by negated row maxes from PSUM; the stabiliser ``-m = min(-scale·max S,
-sink)`` (the sink joins the max) in one instruction; ``P = exp(scale·S - m)`` in the input
dtype; ``Pᵀ`` by TensorE transposes into one PSUM bank and one copy out; ``[O | l] = Pᵀᵀ [V |
1]`` in the input dtype accumulating over the chunks (the ones column gives the row sum ``l`` of
the rounded P); ``1 / (l + exp(sink - m))`` (the sink joins the denominator and has no value
row); ``O · (1/l)`` written into the output tile while leaving PSUM. K and V are loaded once per
KV head (Kᵀ by TensorE transposes) and shared by its query heads; scores never leave the chip.
PSUM evacuations go to VectorE or ScalarE, whichever has less work so far (the cost model's
per-instruction costs).

The instructions are emitted as a software pipeline over the blocks and reordered by
``emit_order.list_order``. The scores are not rounded to the input dtype (the model's graph
rounds its bf16 ``q @ kᵀ``); P is, before ``P V``, as in the model.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import get_dtype
from ...nki.builder import Builder
from ...nki.target import TRN2
from ...nki.types import access_of as _acc
from ...perf.instruction_cost import FREE_OPS, instruction_cost
from .attention_units import advance
from .deallocs import insert_deallocs
from .emit_order import list_order
from .identity_tile import build_identity

P = 128  # partitions
MAX_HEAD_DIM = 128  # q / k feature dim on the partitions for Q Kᵀ
MAX_VALUE_DIM = 511  # v feature dim: [V | 1] in one PSUM bank of fp32 outputs
MAX_KEYS = 512  # keys: one PSUM bank of fp32 scores per unit
MAX_UNITS = 512  # query heads x 128-row query tiles (the kernel is unrolled)
MASKED = float(np.float32(-3.0e38))  # finite: it enters the scores through a matmul (0 * inf is NaN)
DTYPES = ("bf16", "f16", "f32")
F32 = get_dtype("f32")


def rows_per_partition(heads_per_kv: int, m: int, dv: int = 64) -> int:
    """``r``: rows of one head per partition (module docstring); the block's r outputs
    ``[P V | P 1]`` share one PSUM bank."""
    for r in (4, 2):
        if heads_per_kv % r == 0 and m % P == 0 and r * (dv + 1) <= MAX_KEYS:
            return r
    return 1


class _Kernel:
    """Builds the kernel (module docstring) for one operand signature."""

    def __init__(self, types, attrs):
        qt, kt, vt, st = types
        self.dt = qt.dtype
        self.h, self.m, self.d = qt.shape
        self.g, self.n, self.dv = kt.shape[0], kt.shape[1], vt.shape[2]
        self.rep = self.h // self.g  # query heads per KV head
        self.scale = float(np.float32(attrs["scale"]))  # an fp32 immediate
        self.window = int(attrs["window"])
        self.r = rows_per_partition(self.rep, self.m, self.dv)
        self.pph = P // self.r  # partitions per head in a block
        self.b = b = Builder("sink_attention")
        self.q = b.add_input("q", qt.shape, self.dt)
        self.k = b.add_input("k", kt.shape, self.dt)
        self.v = b.add_input("v", vt.shape, self.dt)
        self.sinks = b.add_input("sinks", st.shape, F32)
        self.o = b.alloc((self.h, self.m, self.dv), self.dt, "hbm", name="o")
        self.chunks = [(c0, min(P, self.n - c0)) for c0 in range(0, self.n, P)]
        self.masks: dict[tuple, object] = {}
        self.fast = self.dt.name in TRN2.vector_fast_dtypes
        self.busy: dict[str, float] = {}  # engine -> busy ns of the instructions emitted so far
        self._seen = None

    # ---- constants: sink columns, identity, mask tiles -----------------------------------------
    def sink_columns(self) -> None:
        """``negsink[c, hb] = -sinks[hb·r + c // pph]``: each block's sinks as per-partition
        columns, by one fp32 matmul of a block indicator with the sinks (one 4-byte read each)."""
        b, r, nb = self.b, self.r, self.h // self.r
        s_rows = b.alloc((r, nb), F32, name="sink_rows")
        view = b.hbm_view(self.sinks, (r, nb), (1, r), name="sink_view")
        b.dma_copy(dst=_acc(s_rows, (0, r), (0, nb)), src=_acc(view, (0, r), (0, nb)))
        ind = b.alloc((r, P), F32, name="block_indicator")
        b.memset(dst=_acc(ind, (0, r), (0, P)), value=-1.0, engine="gpsimd")
        for cmp, off in (("greater_equal", 0), ("less_equal", -(self.pph - 1))):
            # keep where c - pph·j >= 0 and c - pph·j - (pph - 1) <= 0
            b.affine_select(
                dst=_acc(ind, (0, r), (0, P)),
                pattern=[[1, P]],
                channel_multiplier=-self.pph,
                on_true_tile=_acc(ind, (0, r), (0, P)),
                on_false_value=0.0,
                cmp_op=cmp,
                offset=off,
            )
        ps = b.alloc((P, nb), F32, "psum", name="ps_sink")
        b.nc_matmul(
            dst=_acc(ps, (0, P), (0, nb)),
            stationary=_acc(ind, (0, r), (0, P)),
            moving=_acc(s_rows, (0, r), (0, nb)),
        )
        self.negsink = b.alloc((P, nb), F32, name="neg_sink")
        b.tensor_copy(dst=_acc(self.negsink, (0, P), (0, nb)), src=_acc(ps, (0, P), (0, nb)))
        self.sink = b.alloc((P, nb), F32, name="sink")
        b.activation(
            dst=_acc(self.sink, (0, P), (0, nb)), op="copy", data=_acc(ps, (0, P), (0, nb)), scale=-1.0
        )

    def identity(self) -> None:
        self.ident = build_identity(self.b, self.dt)

    def visible(self, m0: int, ri: int, rows: int, c0: int, kc: int) -> np.ndarray:
        """[rows, kc] bool: which keys of the chunk the unit's queries see."""
        row = m0 + ri + self.r * np.arange(rows if self.r == 1 else self.pph)[:, None]
        key = c0 + np.arange(kc)[None, :]
        vis = key <= row
        if self.window:
            vis &= key > row - self.window
        return vis

    def mask_tile(self, m0: int, rows: int, c0: int, kc: int):
        """[P, r, kc]: 0 where visible, ``MASKED`` elsewhere, for the rows of the units (row
        offset ``ri`` in the middle dim) against keys c0 .. c0+kc; one tile per (c0 - m0, rows,
        kc), one GpSimd ``affine_select`` per head block and bound (rows are affine in the
        partition within a block)."""
        key = (c0 - m0, rows, kc)
        if key in self.masks:
            return self.masks[key]
        b, r = self.b, self.r
        t = b.alloc((P, r, kc), self.dt, name="mask")
        b.memset(dst=_acc(t, (0, rows), (0, r), (0, kc)), value=0.0)
        span = rows if r == 1 else self.pph
        # key - row = f - ri - r·p + (c0 - m0): causal keeps <= 0, the window keeps > -window;
        # a bound that hides nothing here is not applied (every head block has the same rows)
        row = m0 + np.arange(r)[None, :, None] + r * np.arange(span)[:, None, None]
        key_ = c0 + np.arange(kc)[None, None, :]
        conds = [("less_equal", c0 - m0)] if (key_ > row).any() else []
        if self.window and (key_ <= row - self.window).any():
            conds.append(("greater", c0 - m0 + self.window))
        for j in range(1 if r == 1 else r):
            part = _acc(t, (j * span, span), (0, r), (0, kc))
            for cmp, off in conds:
                b.affine_select(
                    dst=part,
                    pattern=[[-1, r], [1, kc]],
                    channel_multiplier=-r,
                    on_true_tile=part,
                    on_false_value=MASKED,
                    cmp_op=cmp,
                    offset=off,
                )
        self.masks[key] = t
        return t

    # ---- loads ---------------------------------------------------------------------------------
    def load_k(self, gl: list) -> None:
        """K of the KV heads ``gl`` (one, or a pair sharing the partitions: keys on the
        partitions, chunks along the free axis); Kᵀ of the group by one TensorE transpose per
        chunk (head ``i`` on partitions ``i·D ...``) into one PSUM bank and one copy out."""
        b, d, n, nc, ng = self.b, self.d, self.n, len(self.chunks), len(gl)
        kn = b.alloc((P, nc, ng, d), self.dt, name="k_nat")
        if n % P == 0:
            view = b.hbm_view(self.k, (P, nc, ng, d), (d, P * d, n * d, 1), offset=gl[0] * n * d)
            b.dma_copy(
                dst=_acc(kn, (0, P), (0, nc), (0, ng), (0, d)),
                src=_acc(view, (0, P), (0, nc), (0, ng), (0, d)),
            )
        else:
            for c, (c0, kc) in enumerate(self.chunks):
                view = b.hbm_view(self.k, (kc, ng, d), (d, n * d, 1), offset=(gl[0] * n + c0) * d)
                b.dma_copy(
                    dst=_acc(kn, (0, kc), (c, 1), (0, ng), (0, d)), src=_acc(view, (0, kc), (0, ng), (0, d))
                )
        ps = b.alloc((P, n), self.dt, "psum", name="ps_k")
        for c, (c0, kc) in enumerate(self.chunks):
            b.nc_transpose(
                dst=_acc(ps, (0, ng * d), (c0, kc)), data=_acc(kn, (0, kc), (c, 1), (0, ng), (0, d))
            )
        kt = b.alloc((P, n), self.dt, name="k_t")
        b.tensor_copy(
            dst=_acc(kt, (0, ng * d), (0, n)),
            src=_acc(ps, (0, ng * d), (0, n)),
            engine=self.engine(n, self.fast),
        )
        for i, g in enumerate(gl):
            self.kt[g] = (kt, i * d)

    def load_v(self, gl: list) -> None:
        """``[V | 1]`` of each KV head of ``gl``: keys on the partitions, a ones column after
        the values (P V's last column is then the row sum of P)."""
        b, dv, n, nc = self.b, self.dv, self.n, len(self.chunks)
        for g in gl:
            vn = b.alloc((P, nc, dv + 1), self.dt, name="v_nat")  # [V | 1]
            b.memset(dst=_acc(vn, (0, P), (0, nc), (dv, 1)), value=1.0, engine="gpsimd")
            if n % P == 0:
                view = b.hbm_view(self.v, (P, nc, dv), (dv, P * dv, 1), offset=g * n * dv)
                b.dma_copy(dst=_acc(vn, (0, P), (0, nc), (0, dv)), src=_acc(view, (0, P), (0, nc), (0, dv)))
            else:
                for c, (c0, kc) in enumerate(self.chunks):
                    view = b.hbm_view(self.v, (kc, dv), (dv, 1), offset=(g * n + c0) * dv)
                    b.dma_copy(dst=_acc(vn, (0, kc), (c, 1), (0, dv)), src=_acc(view, (0, kc), (0, dv)))
            self.vn[g] = vn

    def q_view(self, x, gl: list, m0: int, rows: int, width: int):
        """HBM view of the query heads of KV heads ``gl``, rows m0 .. m0+rows (r per partition),
        in the tile order (head in block, partition row, KV head, block, row offset, feature)."""
        r, m, rep = self.r, self.m, self.rep
        pph = rows if r == 1 else self.pph
        return self.b.hbm_view(
            x,
            (r, pph, len(gl), rep // r, r, width),
            (m * width, r * width, rep * m * width, r * m * width, width, 1),
            offset=(gl[0] * rep * m + m0) * width,
        )

    def q_transposed(self, q_nat, ng: int, slot: int, rows: int):
        """Qᵀ of block ``slot`` of every KV head of the group: one TensorE transpose per row
        offset (the group's heads side by side on the partitions), one copy out."""
        b, d, r = self.b, self.d, self.r
        rw, col = (0, rows), (0, r)
        ps_q = b.alloc((P, r, P), self.dt, "psum", name="ps_q")
        for ri in range(r):
            b.nc_transpose(
                dst=_acc(ps_q, (0, ng * d), (ri, 1), rw),
                data=_acc(q_nat, rw, (0, ng), (slot, 1), (ri, 1), (0, d)),
            )
        q_t = b.alloc((P, r, P), self.dt, name="q_t")
        b.tensor_copy(
            dst=_acc(q_t, (0, ng * d), col, rw),
            src=_acc(ps_q, (0, ng * d), col, rw),
            engine=self.engine(r * rows, self.fast),
        )
        return q_t

    def engine(self, n: int, fast: bool) -> str:
        """The engine, VectorE or ScalarE, that finishes a PSUM evacuation of ``n`` elements per
        partition (``fast``: 16-bit on both sides, VectorE's 2x mode) with the least busy time
        so far (the cost model's per-instruction costs of everything emitted)."""
        op = self._seen._next if self._seen is not None else self.b.graph.body.first
        while op is not None:
            if not isinstance(op, FREE_OPS):
                c = instruction_cost(op, TRN2)
                self.busy[c.engine] = self.busy.get(c.engine, 0.0) + c.ns
            self._seen, op = op, op._next
        t = TRN2
        factor = t.vector_perf_mode_other_factor if fast else 1
        vec = max(t.min_ii_cycles, n / factor) * 1e9 / t.vector_clock_hz
        sca = max(t.min_ii_cycles, n) * 1e9 / t.scalar_clock_hz
        return (
            "vector" if self.busy.get("vector", 0.0) + vec <= self.busy.get("scalar", 0.0) + sca else "scalar"
        )

    def add_masks(self, s, i: int, m0: int, ri: int, rows: int, vis, lo: int, hi: int, k0: int) -> None:
        """Accumulate ``I · mask`` into unit ``ri``'s scores (slot ``i`` of PSUM tile ``s``) on
        the chunks it only partly sees."""
        b, rw = self.b, (0, rows)
        for c in range(lo, hi + 1):
            c0, kc = self.chunks[c]
            if not vis[c].all():
                mask = self.mask_tile(m0, rows, c0, kc)
                b.nc_matmul(
                    dst=_acc(s, rw, (i, 1), (c0 - k0, kc)),
                    stationary=_acc(self.ident, rw, rw),
                    moving=_acc(mask, rw, (ri, 1), (0, kc)),
                    accumulate=True,
                )

    # ---- one block (r query heads of one KV head, one query tile) as pipeline stages ------------
    def probs_values(self, vn, scores, new, a: int, z: int, w: int, rows: int):
        """Stages of ``P = exp(scale·S - m')``, ``Pᵀ`` and ``[O | l] = Pᵀᵀ [V | 1]`` over key
        chunks a..z (a generator returning the PSUM tile of ``[O | l]``)."""
        b, dv, r = self.b, self.dv, self.r
        rw, col = (0, rows), (0, r)
        k0, nch = self.chunks[a][0], z - a + 1
        probs = []
        for ri, (s, i) in enumerate(scores):
            p = b.alloc((P, w), self.dt, name="probs")
            b.activation(
                dst=_acc(p, rw, (0, w)),
                op="exp",
                data=_acc(s, rw, (i, 1), (0, w)),
                bias=_acc(new, rw, (ri, 1)),
                scale=self.scale,
            )
            probs.append(p)
        yield
        ps_t = b.alloc((P, r, nch, P), self.dt, "psum", name="ps_pt")
        for ri, p in enumerate(probs):
            for c in range(a, z + 1):
                c0, kc = self.chunks[c]
                b.nc_transpose(
                    dst=_acc(ps_t, (0, kc), (ri, 1), (c - a, 1), rw), data=_acc(p, rw, (c0 - k0, kc))
                )
        yield
        yield  # one tick more before the copy: the transposes take a while
        p_t = b.alloc((P, r, nch, P), self.dt, name="probs_t")
        parts = [(0, nch)] if nch == 1 or self.chunks[z][1] == P else [(c, 1) for c in range(nch)]
        for c, cn in parts:  # a partial last chunk is copied apart
            kc = self.chunks[a + c][1] if cn == 1 else P
            b.tensor_copy(
                dst=_acc(p_t, (0, kc), col, (c, cn), rw),
                src=_acc(ps_t, (0, kc), col, (c, cn), rw),
                engine=self.engine(r * cn * rows, self.fast),
            )
        yield
        # P [V | 1]: the last column is the row sum of the (rounded) probabilities
        pv = b.alloc((P, r, dv + 1), F32, "psum", name="pv")
        for ri in range(r):
            for c in range(a, z + 1):
                kc = self.chunks[c][1]
                b.nc_matmul(
                    dst=_acc(pv, rw, (ri, 1), (0, dv + 1)),
                    stationary=_acc(p_t, (0, kc), (ri, 1), (c - a, 1), rw),
                    moving=_acc(vn, (0, kc), (c, 1), (0, dv + 1)),
                    accumulate=c > a,
                )
        return pv

    def normalise(self, total, negm, sink_col, out, head, slot: int, rows: int):
        """Stages of ``O = total[:, :dv] / (total[:, dv] + exp(sink - m))`` (``negm`` = -m per
        unit, ``sink_col`` the block's sinks column) written to ``out[rows, head, slot, unit]``."""
        b, dv, r = self.b, self.dv, self.r
        rw, col = (0, rows), (0, r)
        sink_e = b.alloc((P, r, 1), F32, name="sink_exp")  # exp(sink - m)
        b.activation(
            dst=_acc(sink_e, rw, col, (0, 1)),
            op="exp",
            data=_acc(negm, rw, col),
            bias=_acc(self.sink, rw, sink_col),
        )
        yield
        denom = b.alloc((P, r, 1), F32, name="denominator")
        b.tensor_tensor(
            dst=_acc(denom, rw, col, (0, 1)),
            data1=_acc(total, rw, col, (dv, 1)),
            data2=_acc(sink_e, rw, col, (0, 1)),
            op="add",
        )
        recip = b.alloc((P, r, 1), F32, name="recip")
        b.activation(dst=_acc(recip, rw, col, (0, 1)), op="reciprocal", data=_acc(denom, rw, col, (0, 1)))
        yield
        for ri in range(r):
            dst = _acc(out, rw, head, (slot, 1), (ri, 1), (0, dv))
            src = _acc(total, rw, (ri, 1), (0, dv))
            scale = _acc(recip, rw, (ri, 1), (0, 1))
            if self.engine(dv, False) == "scalar":
                b.activation(dst=dst, op="copy", data=src, scale=scale)
            else:
                b.tensor_scalar(dst=dst, data=src, op0="multiply", operand0=scale)

    def block(self, g: int, gi: int, hb: int, slot: int, m0: int, rows: int, q_t, out):
        """Emit the block's r units (KV head ``g``, the ``gi``-th of its group: its Qᵀ and Kᵀ on
        partitions ``gi·D ...``), one stage per ``next()``. The units share their PSUM tiles
        (scores of ``per`` units per bank, one bank of Pᵀ, one of outputs) so that two blocks
        fit the 8 banks."""
        b, d, r = self.b, self.d, self.r
        (kt, koff), vn = self.kt[g], self.vn[g]
        rw, col = (0, rows), (0, r)
        vis = [[self.visible(m0, ri, rows, c0, kc) for c0, kc in self.chunks] for ri in range(r)]
        used = [c for c in range(len(self.chunks)) if any(v[c].any() for v in vis)]
        lo, hi = used[0], used[-1]
        k0, k1 = self.chunks[lo][0], self.chunks[hi][0] + self.chunks[hi][1]
        w = k1 - k0
        yield
        per = max(1, min(r, MAX_KEYS // w))  # units per PSUM bank of scores
        scores = []  # (tile, index in tile) per unit
        for ri in range(r):
            if ri % per == 0:
                s = b.alloc((P, min(per, r - ri), w), F32, "psum", name="scores")
            scores.append((s, ri % per))
            b.nc_matmul(
                dst=_acc(s, rw, (ri % per, 1), (0, w)),
                stationary=_acc(q_t, (koff, d), (ri, 1), rw),
                moving=_acc(kt, (koff, d), (k0, w)),
            )
            self.add_masks(s, ri % per, m0, ri, rows, vis[ri], lo, hi, k0)
        yield
        negmax = b.alloc((P, r), F32, name="neg_max")
        for ri in range(0, r, per):
            s, _ = scores[ri]
            n_in = min(per, r - ri)
            b.tensor_reduce(
                dst=_acc(negmax, rw, (ri, n_in)),
                op="maximum",
                data=_acc(s, rw, (0, n_in), (0, w)),
                axis=2,
                negate=True,
            )
        yield
        bias = b.alloc((P, r), F32, name="exp_bias")  # -m = min(-scale·max S, -sink)
        b.tensor_scalar(
            dst=_acc(bias, rw, col),
            data=_acc(negmax, rw, col),
            op0="multiply",
            operand0=self.scale,
            op1="minimum",
            operand1=_acc(self.negsink, rw, (hb, 1)),
        )
        yield
        pv = yield from self.probs_values(vn, scores, bias, lo, hi, w, rows)
        yield from self.normalise(pv, bias, (hb, 1), out, (gi, 1), slot, rows)

    def build(self):
        """Constants, then per (KV head, query tile) the Q load, each head block as a pipeline
        (every tick starts the next block and advances the running ones one stage), the O store
        once the tile's last block is done; then the list schedule and deallocations."""
        b, d, dv, r = self.b, self.d, self.dv, self.r
        self.kt, self.vn = {}, {}
        self.identity()
        running = []
        ng = 2 if self.g % 2 == 0 and self.d in (32, 64) else 1  # KV heads sharing the partitions
        nb = self.rep // r
        for g0 in range(0, self.g, ng):
            gl = list(range(g0, g0 + ng))
            self.load_k(gl)
            for m0 in range(0, self.m, P):
                rows = min(P, self.m - m0)
                q_nat = b.alloc((P, ng, nb, r, d), self.dt, name="q_nat")
                view = self.q_view(self.q, gl, m0, rows, d)
                b.dma_copy(
                    dst=_acc(q_nat, (0, rows), (0, ng), (0, nb), (0, r), (0, d)),
                    src=_acc(view, *[(0, n) for n in view.type.shape]),
                )
                if m0 == 0:  # V after the first Q load: it is needed last
                    if g0 == 0:  # the sinks too (short strided reads)
                        self.sink_columns()
                    self.load_v(gl)
                out = b.alloc((P, ng, nb, r, dv), self.dt, name="out")
                oview = self.q_view(self.o, gl, m0, rows, dv)
                store = (
                    _acc(oview, *[(0, n) for n in oview.type.shape]),
                    _acc(out, (0, rows), (0, ng), (0, nb), (0, r), (0, dv)),
                )
                for slot in range(nb):
                    q_t = self.q_transposed(q_nat, ng, slot, rows)
                    for i, g in enumerate(gl):
                        gen = self.block(g, i, g * nb + slot, slot, m0, rows, q_t, out)
                        last = slot == nb - 1 and i == ng - 1
                        running.append((gen, store if last else None))
                        running = advance(self.b, running)
        while running:
            running = advance(self.b, running)
        b.set_outputs({"o": self.o})
        list_order(b.graph.body, TRN2)
        insert_deallocs(b.graph.body)
        return b.graph
