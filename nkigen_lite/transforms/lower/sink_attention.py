"""``tensor.sink_attention`` lowered as one unrolled kernel: causal (optionally sliding-window)
grouped-query attention whose softmax also counts a per-head sink logit.

**Layout.** ``r`` (4, 2 or 1: the largest dividing the query heads per KV head, 1 unless the
rows are a multiple of 128) consecutive query heads of one KV head share each 128-partition
tile: head ``j`` of the block on partitions ``j·128/r ...``, each partition holding ``r``
consecutive rows of its head, so the Q loads and O stores move runs of ``r·D`` elements per
descriptor instead of one row. A *unit* is one such head block, one 128-row query tile and one
row offset ``ri < r``: its 128 queries are row ``m0 + r·p + ri`` of head ``j`` on partition
``j·128/r + p``, all reading the same KV head, so one ``S = Q Kᵀ`` matmul covers them.

**Per unit:** Qᵀ by one TensorE transpose per row offset (four per PSUM bank, one copy out);
``S = Qᵀᵀ Kᵀ`` over the key chunks some query sees (chunks every query of the unit cannot see —
after the diagonal, or before the window — are skipped); on the chunks only partly visible the
mask is added by the Tensor engine itself, accumulating ``I · M`` into the scores (``M`` holds 0
or ``MASKED``; one constant tile per (chunk offset, row offset), built by GpSimd
``affine_select`` per head block, whose rows are affine in the partition); ``-max S`` by a
negated row max from PSUM; the stabiliser ``-m = min(-scale·max S, -sink)`` (the sink joins the
max) for the block's ``r`` units in one instruction; ``P = exp(scale·S - m)`` in the input dtype
with its row sum fused; ``1 / (ΣP + exp(sink - m))`` for the block (the sink joins the
denominator and has no value row); ``Pᵀ`` by TensorE transposes (one copy out per unit);
``O = Pᵀᵀ V`` in the input dtype accumulating over the chunks; ``O · (1/l)`` written into the
block's output tile while leaving PSUM. K and V are loaded once per KV head (Kᵀ by TensorE
transposes) and shared by its query heads; scores never leave the chip.

The instructions are emitted as a software pipeline over the blocks and reordered by
``emit_order.list_order``. The scores are not rounded to the input dtype (the model's graph
rounds its bf16 ``q @ kᵀ``); P is, before ``P V``, as in the model.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import get_dtype
from ...ir.errors import BuildError
from ...nki.builder import Builder
from ...nki.target import TRN2
from ...nki.types import Access, Affine, DimSlice
from ...tensor.composites_sink_attention import SinkAttentionOp
from .custom import register_composite_lowering
from .deallocs import insert_deallocs
from .emit_order import list_order

P = 128  # partitions
MAX_HEAD_DIM = 128  # q / k feature dim on the partitions for Q Kᵀ
MAX_VALUE_DIM = 512  # v feature dim: one PSUM bank of fp32 outputs
MAX_KEYS = 512  # keys: one PSUM bank of fp32 scores per unit
MAX_UNITS = 512  # query heads x 128-row query tiles (the kernel is unrolled)
MASKED = float(np.float32(-3.0e38))  # finite: it enters the scores through a matmul (0 * inf is NaN)
DTYPES = ("bf16", "f16", "f32")
F32 = get_dtype("f32")


def _ds(start: int, size: int) -> DimSlice:
    return DimSlice(Affine.of(start), size, 1)


def _acc(t, *dims) -> Access:
    return Access(t, tuple(_ds(*d) if isinstance(d, tuple) else d for d in dims))


def rows_per_partition(heads_per_kv: int, m: int) -> int:
    """``r``: rows of one head per partition (module docstring)."""
    for r in (4, 2):
        if heads_per_kv % r == 0 and m % P == 0:
            return r
    return 1


def supported(q_shape, k_shape, v_shape, s_shape, dtype, attrs) -> bool:
    """Shapes the kernel handles: q (H, M, D), k (G, N, D), v (G, N, Dv), sinks (H,), G dividing
    H, M == N <= 512, D <= 128, Dv <= 512, at most ``MAX_UNITS`` query heads x 128-row tiles, a
    bf16 / f16 / f32 dtype and a window >= 0."""
    qs, ks, vs, ss = (tuple(s) for s in (q_shape, k_shape, v_shape, s_shape))
    if not (len(qs) == len(ks) == len(vs) == 3 and len(ss) == 1) or min(qs + ks + vs) <= 0:
        return False
    (h, m, d), (g, n, dk), (gv, nv, dv) = qs, ks, vs
    if ss != (h,) or h % g or (gv, nv) != (g, n) or dk != d or m != n:
        return False
    if d > MAX_HEAD_DIM or dv > MAX_VALUE_DIM or n > MAX_KEYS or int(attrs.get("window", 0)) < 0:
        return False
    if getattr(dtype, "name", dtype) not in DTYPES:
        return False
    return h * -(-m // P) <= MAX_UNITS


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
        self.r = rows_per_partition(self.rep, self.m)
        self.pph = P // self.r  # partitions per head in a block
        self.b = b = Builder("sink_attention")
        self.q = b.add_input("q", qt.shape, self.dt)
        self.k = b.add_input("k", kt.shape, self.dt)
        self.v = b.add_input("v", vt.shape, self.dt)
        self.sinks = b.add_input("sinks", st.shape, F32)
        self.o = b.alloc((self.h, self.m, self.dv), self.dt, "hbm", name="o")
        self.chunks = [(c0, min(P, self.n - c0)) for c0 in range(0, self.n, P)]
        self.masks: dict[tuple, object] = {}
        self.engine_turn = 0

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
        b = self.b
        self.ident = b.alloc((P, P), self.dt, name="identity")
        b.memset(dst=_acc(self.ident, (0, P), (0, P)), value=1.0, engine="gpsimd")
        b.affine_select(
            dst=_acc(self.ident, (0, P), (0, P)),
            pattern=[[1, P]],
            channel_multiplier=-1,
            on_true_tile=_acc(self.ident, (0, P), (0, P)),
            on_false_value=0.0,
            cmp_op="equal",
        )

    def visible(self, m0: int, ri: int, rows: int, c0: int, kc: int) -> np.ndarray:
        """[rows, kc] bool: which keys of the chunk the unit's queries see."""
        row = m0 + ri + self.r * np.arange(rows if self.r == 1 else self.pph)[:, None]
        key = c0 + np.arange(kc)[None, :]
        vis = key <= row
        if self.window:
            vis &= key > row - self.window
        return vis

    def mask_tile(self, m0: int, ri: int, rows: int, c0: int, kc: int):
        """0 where visible, ``MASKED`` elsewhere, for the unit's rows against keys c0 .. c0+kc;
        one tile per (c0 - m0, ri, rows, kc)."""
        key = (c0 - m0, ri, rows, kc)
        if key in self.masks:
            return self.masks[key]
        b, r = self.b, self.r
        t = b.alloc((P, kc), self.dt, name="mask")
        b.memset(dst=_acc(t, (0, rows), (0, kc)), value=0.0, engine="gpsimd")
        span = rows if r == 1 else self.pph
        for j in range(1 if r == 1 else r):
            part = _acc(t, (j * span, span), (0, kc))
            # key - row = f - r·p + (c0 - m0 - ri): causal keeps <= 0, the window keeps > -window
            conds = [("less_equal", c0 - m0 - ri)]
            if self.window:
                conds.append(("greater", c0 - m0 - ri + self.window))
            for cmp, off in conds:
                b.affine_select(
                    dst=part,
                    pattern=[[1, kc]],
                    channel_multiplier=-r,
                    on_true_tile=part,
                    on_false_value=MASKED,
                    cmp_op=cmp,
                    offset=off,
                )
        self.masks[key] = t
        return t

    # ---- loads ---------------------------------------------------------------------------------
    def load_kv(self, g: int) -> None:
        """K and V of KV head ``g`` (keys on the partitions, chunks along the free axis), Kᵀ by
        TensorE transposes into one PSUM bank and one copy out."""
        b, d, dv, n = self.b, self.d, self.dv, self.n
        kn = b.alloc((P, len(self.chunks), d), self.dt, name="k_nat")
        vn = b.alloc((P, len(self.chunks), dv), self.dt, name="v_nat")
        for src, dst, width in ((self.k, kn, d), (self.v, vn, dv)):
            if n % P == 0:
                view = b.hbm_view(src, (P, n // P, width), (width, P * width, 1), offset=g * n * width)
                b.dma_copy(
                    dst=_acc(dst, (0, P), (0, n // P), (0, width)),
                    src=_acc(view, (0, P), (0, n // P), (0, width)),
                )
                continue
            for c, (c0, kc) in enumerate(self.chunks):
                view = b.hbm_view(src, (kc, width), (width, 1), offset=(g * n + c0) * width)
                b.dma_copy(dst=_acc(dst, (0, kc), (c, 1), (0, width)), src=_acc(view, (0, kc), (0, width)))
        ps = b.alloc((P, n), self.dt, "psum", name="ps_k")
        for c, (c0, kc) in enumerate(self.chunks):
            b.nc_transpose(dst=_acc(ps, (0, d), (c0, kc)), data=_acc(kn, (0, kc), (c, 1), (0, d)))
        kt = b.alloc((P, n), self.dt, name="k_t")
        b.tensor_copy(dst=_acc(kt, (0, d), (0, n)), src=_acc(ps, (0, d), (0, n)), engine=self.engine())
        self.kt[g], self.vn[g] = kt, vn

    def q_view(self, x, g: int, m0: int, rows: int, width: int):
        """HBM view of KV head ``g``'s query heads, rows m0 .. m0+rows (r·rows/128 per partition),
        in the tile order (head in block, partition row, block, row offset, feature)."""
        r, m = self.r, self.m
        pph = rows if r == 1 else self.pph
        return self.b.hbm_view(
            x,
            (r, pph, self.rep // r, r, width),
            (m * width, r * width, r * m * width, width, 1),
            offset=(g * self.rep * m + m0) * width,
        )

    def engine(self) -> str:
        """Alternate PSUM evacuations between VectorE and ScalarE."""
        self.engine_turn += 1
        return "vector" if self.engine_turn % 2 else "scalar"

    def add_masks(self, s, i: int, m0: int, ri: int, rows: int, vis, lo: int, hi: int, k0: int) -> None:
        """Accumulate ``I · mask`` into unit ``ri``'s scores (slot ``i`` of PSUM tile ``s``) on
        the chunks it only partly sees."""
        b, rw = self.b, (0, rows)
        for c in range(lo, hi + 1):
            c0, kc = self.chunks[c]
            if not vis[c].all():
                mask = self.mask_tile(m0, ri, rows, c0, kc)
                b.nc_matmul(
                    dst=_acc(s, rw, (i, 1), (c0 - k0, kc)),
                    stationary=_acc(self.ident, rw, rw),
                    moving=_acc(mask, rw, (0, kc)),
                    accumulate=True,
                )

    # ---- one block (r query heads of one KV head, one query tile) as pipeline stages ------------
    def block(self, g: int, hb: int, slot: int, m0: int, rows: int, q_nat, out):
        """Emit the block's r units, one stage per ``next()``. The units share their PSUM tiles
        (scores of ``per`` units per bank, one bank of Pᵀ, one of outputs) so that two blocks
        fit the 8 banks."""
        b, d, dv, r = self.b, self.d, self.dv, self.r
        kt, vn = self.kt[g], self.vn[g]
        rw, col = (0, rows), (0, r)
        vis = [[self.visible(m0, ri, rows, c0, kc) for c0, kc in self.chunks] for ri in range(r)]
        used = [c for c in range(len(self.chunks)) if any(v[c].any() for v in vis)]
        lo, hi = used[0], used[-1]
        nch = hi - lo + 1
        k0, k1 = self.chunks[lo][0], self.chunks[hi][0] + self.chunks[hi][1]
        w = k1 - k0
        ps_q = b.alloc((P, r, P), self.dt, "psum", name="ps_q")
        for ri in range(r):
            b.nc_transpose(
                dst=_acc(ps_q, (0, d), (ri, 1), rw), data=_acc(q_nat, rw, (slot, 1), (ri, 1), (0, d))
            )
        yield
        q_t = b.alloc((P, r, P), self.dt, name="q_t")
        b.tensor_copy(dst=_acc(q_t, (0, d), col, rw), src=_acc(ps_q, (0, d), col, rw), engine=self.engine())
        yield
        per = max(1, min(r, MAX_KEYS // w))  # units per PSUM bank of scores
        scores = []  # (tile, index in tile) per unit
        for ri in range(r):
            if ri % per == 0:
                s = b.alloc((P, min(per, r - ri), w), F32, "psum", name="scores")
            scores.append((s, ri % per))
            b.nc_matmul(
                dst=_acc(s, rw, (ri % per, 1), (0, w)),
                stationary=_acc(q_t, (0, d), (ri, 1), rw),
                moving=_acc(kt, (0, d), (k0, w)),
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
        total = b.alloc((P, r), F32, name="row_sum")
        probs = []
        for ri, (s, i) in enumerate(scores):
            p = b.alloc((P, w), self.dt, name="probs")
            b.activation(
                dst=_acc(p, rw, (0, w)),
                op="exp",
                data=_acc(s, rw, (i, 1), (0, w)),
                bias=_acc(bias, rw, (ri, 1)),
                scale=self.scale,
                reduce_res=_acc(total, rw, (ri, 1)),
            )
            probs.append(p)
        yield
        sink_e = b.alloc((P, r), F32, name="sink_exp")  # exp(sink - m)
        b.activation(
            dst=_acc(sink_e, rw, col), op="exp", data=_acc(bias, rw, col), bias=_acc(self.sink, rw, (hb, 1))
        )
        denom = b.alloc((P, r), F32, name="denominator")
        b.tensor_tensor(
            dst=_acc(denom, rw, col), data1=_acc(total, rw, col), data2=_acc(sink_e, rw, col), op="add"
        )
        recip = b.alloc((P, r), F32, name="recip")
        b.activation(dst=_acc(recip, rw, col), op="reciprocal", data=_acc(denom, rw, col))
        ps_t = b.alloc((P, r, nch, P), self.dt, "psum", name="ps_pt")
        for ri, p in enumerate(probs):
            for c in range(lo, hi + 1):
                c0, kc = self.chunks[c]
                b.nc_transpose(
                    dst=_acc(ps_t, (0, kc), (ri, 1), (c - lo, 1), rw), data=_acc(p, rw, (c0 - k0, kc))
                )
        yield
        yield  # one tick more before the copy: the transposes take a while
        p_t = b.alloc((P, r, nch, P), self.dt, name="probs_t")
        kc = self.chunks[lo][1] if nch == 1 else P
        if nch > 1 and self.chunks[hi][1] != P:  # a partial last chunk: copy the chunks apart
            for c in range(nch):
                kc = self.chunks[lo + c][1]
                b.tensor_copy(
                    dst=_acc(p_t, (0, kc), col, (c, 1), rw),
                    src=_acc(ps_t, (0, kc), col, (c, 1), rw),
                    engine=self.engine(),
                )
        else:
            b.tensor_copy(
                dst=_acc(p_t, (0, kc), col, (0, nch), rw),
                src=_acc(ps_t, (0, kc), col, (0, nch), rw),
                engine=self.engine(),
            )
        yield
        pv = b.alloc((P, r, dv), F32, "psum", name="pv")
        for ri in range(r):
            for c in range(lo, hi + 1):
                kc = self.chunks[c][1]
                b.nc_matmul(
                    dst=_acc(pv, rw, (ri, 1), (0, dv)),
                    stationary=_acc(p_t, (0, kc), (ri, 1), (c - lo, 1), rw),
                    moving=_acc(vn, (0, kc), (c, 1), (0, dv)),
                    accumulate=c > lo,
                )
        yield
        for ri in range(r):
            dst = _acc(out, rw, (slot, 1), (ri, 1), (0, dv))
            src = _acc(pv, rw, (ri, 1), (0, dv))
            if self.engine() == "scalar":
                b.activation(dst=dst, op="copy", data=src, scale=_acc(recip, rw, (ri, 1)))
            else:
                b.tensor_scalar(dst=dst, data=src, op0="multiply", operand0=_acc(recip, rw, (ri, 1)))

    def build(self):
        """Constants, then per (KV head, query tile) the Q load, each head block as a pipeline
        (every tick starts the next block and advances the running ones one stage), the O store
        once the tile's last block is done; then the list schedule and deallocations."""
        b, d, dv, r = self.b, self.d, self.dv, self.r
        self.kt, self.vn = {}, {}
        self.sink_columns()
        self.identity()
        running = []
        for g in range(self.g):
            self.load_kv(g)
            for m0 in range(0, self.m, P):
                rows = min(P, self.m - m0)
                nb = self.rep // r
                q_nat = b.alloc((P, nb, r, d), self.dt, name="q_nat")
                view = self.q_view(self.q, g, m0, rows, d)
                b.dma_copy(
                    dst=_acc(q_nat, (0, rows), (0, nb), (0, r), (0, d)),
                    src=_acc(view, *[(0, n) for n in view.type.shape]),
                )
                out = b.alloc((P, nb, r, dv), self.dt, name="out")
                oview = self.q_view(self.o, g, m0, rows, dv)
                store = (
                    _acc(oview, *[(0, n) for n in oview.type.shape]),
                    _acc(out, (0, rows), (0, nb), (0, r), (0, dv)),
                )
                for slot in range(nb):
                    gen = self.block(g, g * nb + slot, slot, m0, rows, q_nat, out)
                    running.append((gen, store if slot == nb - 1 else None))
                    running = self.tick(running)
        while running:
            running = self.tick(running)
        b.set_outputs({"o": self.o})
        list_order(b.graph.body, TRN2)
        insert_deallocs(b.graph.body)
        return b.graph

    def tick(self, running: list) -> list:
        """Advance every running block by one stage (oldest first); store finished tiles."""
        left = []
        for gen, store in running:
            try:
                next(gen)
                left.append((gen, store))
            except StopIteration:
                if store is not None:
                    self.b.dma_copy(dst=store[0], src=store[1])
        return left


def sink_attention_body(types, attrs):
    """The NKI kernel of one ``tensor.sink_attention`` with operand types ``types``."""
    qt, kt, vt, st = types
    if (
        not (qt.dtype is kt.dtype is vt.dtype)
        or st.dtype is not F32
        or not supported(qt.shape, kt.shape, vt.shape, st.shape, qt.dtype, attrs)
    ):
        shapes = ", ".join(f"{n} {t}" for n, t in zip(("q", "k", "v", "sinks"), types))
        raise BuildError(
            f"tensor.sink_attention ({shapes}): the kernel takes q (H, M, D), k (G, N, D), v (G, N, Dv) "
            f"of one dtype ({'/'.join(DTYPES)}) and f32 sinks (H,), G dividing H, M == N <= {MAX_KEYS}, "
            f"D <= {MAX_HEAD_DIM}, Dv <= {MAX_VALUE_DIM}, window >= 0, and at most {MAX_UNITS} query "
            "heads x 128-row query tiles"
        )
    return _Kernel(types, attrs).build()


register_composite_lowering(SinkAttentionOp, sink_attention_body)
