"""``tensor.flash_attention`` over few keys (one PSUM bank of scores) as a software pipeline.

When every key of a batch instance fits one PSUM bank of fp32 scores (``N <= MAX_KEYS``) and
there are several query tiles, the softmax needs no running max: each query tile computes
``S = Q Kᵀ`` whole. Per batch instance K and V are loaded once (one DMA each when N is a
multiple of 128, in a key order that gives every partition ``N / 128`` consecutive rows — 2 KiB
contiguous for N = 512, head dim 128 — and the same order for K and V, which the softmax and
the value product do not see), Kᵀ is transposed once on the Tensor engine (in two parts, each
into its own PSUM tile, query tile 0's transpose between them) and the Qᵀ of the first
``LOOKAHEAD`` query tiles before the first score matmuls, the others after them. Then query
tile t runs

    S_t = Q_t Kᵀ (PSUM)  ->  m = max S_t (VectorE, from PSUM)  ->  P_t = exp(c·S_t − c·m) with its
    row sum l (ScalarE, from PSUM; 1/√d folded into the activation's scale)  ->  P_tᵀ (TensorE
    transposes, copies split over ScalarE and VectorE)  ->  O_t = P_t V (PSUM)  ->  O_t · (1/l)
    (read out of PSUM into the stored tile)

and the Tensor engine's program order runs ``LOOKAHEAD`` score matmuls ahead of the transposes
and value products: while the softmax of tile t runs on VectorE / ScalarE, TensorE computes the
scores of tiles t + 1 and t + 2 and the value product of tile t − 1, so it never waits for the
softmax chain (docs/costmodel.md: every engine runs its instructions in program order).
The normalisation by 1/l moves after the value product ([M, Dv] instead of [M, N]).
"""

from __future__ import annotations

from ...ir.dtypes import get_dtype
from ...nki.builder import Builder
from ...nki.target import TRN2
from ...nki.types import Access
from ...nki.types import ds as _ds
from ...perf.schedule import Scheduler
from .deallocs import insert_deallocs

P = 128  # partitions
MAX_KEYS = 512  # one PSUM bank of fp32 scores per query tile
MAX_QUERY_TILES = 16  # query tiles unrolled per batch instance (the code grows with them)
MIN_QUERY_TILES = 2  # below this there is nothing to pipeline: the row pipeline does as well
LOOKAHEAD = 3  # score matmuls on TensorE between a tile's scores and its Pᵀ transposes
PV_LAG = 2  # Pᵀ transposes of later tiles between a tile's Pᵀ and its value product
# the Tensor engine's (lookahead, lag) orders tried; the one the cost model schedules shortest is
# kept (ties to the first). attention s512 d128 f32: (3, 2) 15.78 us, (2, 1) 15.67, (3, 1) 16.02;
# of all 462 orders of its 4 tiles' stages (score matmuls, Pᵀ and value products each in tile
# order, each after the tile's previous stage) (2, 1) is the shortest
TENSOR_ORDERS = ((LOOKAHEAD, PV_LAG), (2, 1), (3, 1))
MIN_BLOCK = 64  # columns below which a value-product block costs as much as a wider one
F32 = get_dtype("f32")


def _acc(t, *dims) -> Access:
    return Access(t, tuple(dims))


def short_supported(q_type, k_type, v_type, base_supported) -> bool:
    """The shapes this kernel handles: what ``base_supported`` (the flash_attention kernel's
    rule: f32, equal batch dims, D <= 128, Dv <= 512) accepts, with at most ``MAX_KEYS`` keys and
    ``MIN_QUERY_TILES`` to ``MAX_QUERY_TILES`` query tiles of 128 rows."""
    if not base_supported(q_type, k_type, v_type):
        return False
    tiles = -(-q_type.shape[-2] // P)
    return k_type.shape[-2] <= MAX_KEYS and MIN_QUERY_TILES <= tiles <= MAX_QUERY_TILES


def tensor_order(tiles: int, lookahead: int, lag: int) -> list[tuple[str, int]]:
    """The Tensor engine's order of the per-tile stages: ``("S", t)`` (scores), ``("PT", t)``
    (Pᵀ transposes), ``("PV", t)`` (value product). Pᵀ_t follows S_{t+lookahead} (its softmax
    runs behind that many score matmuls) and O_t follows Pᵀ_{t+lag} (the Pᵀ copies out of PSUM
    run behind those transposes); the rest drain in the same interleaving."""
    order: list[tuple[str, int]] = []
    pt = pv = 0

    def flush_pv(limit: int) -> None:
        nonlocal pv
        while pv < limit:
            order.append(("PV", pv))
            pv += 1

    for s in range(tiles):
        order.append(("S", s))
        while pt <= s - lookahead:
            order.append(("PT", pt))
            pt += 1
            flush_pv(pt - lag)
    while pt < tiles:
        order.append(("PT", pt))
        pt += 1
        flush_pv(pt - lag)
    flush_pv(tiles)
    return order


def _row_major_strides(shape) -> list[int]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return list(reversed(strides))


def build_over_batch(b: Builder, batch, instance, out):
    """Finish an attention kernel: ``instance(idx)`` once per batch index (a loop per batch dim
    of size > 1, index 0 for size-1 dims), ``out`` as the kernel's output ``o``, then each tile's
    dealloc after its last use; returns the graph."""

    def level(lv: int, idx: list) -> None:
        if lv == len(batch):
            instance(idx)
        elif batch[lv] == 1:
            level(lv + 1, idx + [0])
        else:
            with b.fori_loop(0, batch[lv]) as i:
                level(lv + 1, idx + [i])

    level(0, [])
    b.set_outputs({"o": out})
    insert_deallocs(b.graph.body)
    return b.graph


class _Kernel:
    """Builds the pipelined kernel (module docstring) for one operand signature."""

    def __init__(self, types, scale: float, order: tuple[int, int] = (LOOKAHEAD, PV_LAG)):
        qt, kt, vt = types
        self.order = order  # (lookahead, lag) of the Tensor engine's stages (``tensor_order``)
        self.qt, self.kt, self.vt, self.scale = qt, kt, vt, scale
        self.batch = qt.shape[:-2]
        self.m, self.d = qt.shape[-2:]
        self.n, self.dv = kt.shape[-2], vt.shape[-1]
        self.chunks = -(-self.n // P)
        # one DMA per operand with consecutive rows on a partition (a key permutation)
        self.grouped = self.n % P == 0 and self.chunks > 1
        self.b = b = Builder("flash_attention")
        self.q = b.add_input("q", qt.shape, qt.dtype)
        self.k = b.add_input("k", kt.shape, kt.dtype)
        self.v = b.add_input("v", vt.shape, vt.dtype)
        self.o = b.alloc(self.batch + (self.m, self.dv), qt.dtype, "hbm", name="o")
        if self.grouped:
            self.k_rows = self._row_view(self.k, self.d, "k_rows")
            self.v_rows = self._row_view(self.v, self.dv, "v_rows")

    # ---- helpers --------------------------------------------------------------------------------
    def _row_view(self, x, cols: int, name: str):
        """x (..., N, cols) seen as (..., 128, (N / 128) · cols): partition p holds rows
        p · N/128 ... p · N/128 + N/128 − 1, contiguous in HBM."""
        strides = _row_major_strides(x.type.shape)[:-2]
        width = self.chunks * cols
        return self.b.hbm_view(x, self.batch + (P, width), strides + [width, 1], name=name)

    def win(self, t, idx, r0, rn: int, c0, cn: int) -> Access:
        return Access(t, tuple(_ds(i, 1) for i in idx) + (_ds(r0, rn), _ds(c0, cn)))

    def kc(self, c: int) -> int:
        return min(P, self.n - c * P)

    # ---- stages ---------------------------------------------------------------------------------
    def load_k(self, idx):
        """K into SBUF: natural rows, key chunk c in columns c·D ... (grouped: partition p holds
        keys p·C ... p·C + C − 1 instead)."""
        b, d, C = self.b, self.d, self.chunks
        kn = b.alloc((P, C * d), self.kt.dtype, name="k_nat")
        if self.grouped:
            b.dma_copy(dst=_acc(kn, _ds(0, P), _ds(0, C * d)), src=self.win(self.k_rows, idx, 0, P, 0, C * d))
            return kn
        for c in range(C):
            b.dma_copy(
                dst=_acc(kn, _ds(0, self.kc(c)), _ds(c * d, d)),
                src=self.win(self.k, idx, c * P, self.kc(c), 0, d),
            )
        return kn

    def load_v(self, idx):
        """V into SBUF in the key order of K, chunk c in columns c·Dv ..."""
        b, dv, C = self.b, self.dv, self.chunks
        vb = b.alloc((P, C * dv), self.vt.dtype, name="v_resident")
        if self.grouped:
            b.dma_copy(
                dst=_acc(vb, _ds(0, P), _ds(0, C * dv)), src=self.win(self.v_rows, idx, 0, P, 0, C * dv)
            )
            return vb
        for c in range(C):
            b.dma_copy(
                dst=_acc(vb, _ds(0, self.kc(c)), _ds(c * dv, dv)),
                src=self.win(self.v, idx, c * P, self.kc(c), 0, dv),
            )
        return vb

    def load_q(self, idx, t: int):
        mt = min(P, self.m - t * P)
        qn = self.b.alloc((P, self.d), self.qt.dtype, name="q_nat")
        self.b.dma_copy(
            dst=_acc(qn, _ds(0, mt), _ds(0, self.d)), src=self.win(self.q, idx, t * P, mt, 0, self.d)
        )
        return qn

    def transpose_k(self, kn, between=None):
        """Kᵀ [D, N] in up to two parts (t, c0, cn): columns c0 ... c0 + cn - 1 of Kᵀ (column
        c·128 + p is key chunk c, partition p) in tile t. Each part is transposed into its own
        PSUM tile, so its copy out waits only for its own transposes; ``between()`` emits
        TensorE work after the first part's transposes (the first Qᵀ: its tile lands after
        K's first chunks are transposed)."""
        b, d = self.b, self.d
        first = -(-self.chunks // 2) if self.chunks > 1 else 1
        groups = [range(0, first), range(first, self.chunks)] if self.chunks > 1 else [range(1)]
        parts = []
        for i, chunks in enumerate(groups):
            c0, cn = chunks[0] * P, sum(self.kc(c) for c in chunks)
            ps = b.alloc((P, cn), self.kt.dtype, "psum", name="ps_kt")
            for c in chunks:
                b.nc_transpose(
                    dst=_acc(ps, _ds(0, d), _ds(c * P - c0, self.kc(c))),
                    data=_acc(kn, _ds(0, self.kc(c)), _ds(c * d, d)),
                )
            if i == 0 and between is not None:
                between()
            parts.append((ps, c0, cn))
        # the parts in two tiles, copied by VectorE and ScalarE side by side (one tile written
        # by both would order the second copy after the first)
        k_t = []
        for i, (ps, c0, cn) in enumerate(parts):
            t = b.alloc((P, MAX_KEYS), self.kt.dtype, name="k_t")
            b.tensor_copy(
                dst=_acc(t, _ds(0, d), _ds(0, cn)),
                src=_acc(ps, _ds(0, d), _ds(0, cn)),
                engine=("vector", "scalar")[i],
            )
            k_t.append((t, c0, cn))
        return k_t

    def transpose_q(self, qn, mt: int, engine: str):
        """c·Qᵀ of one query tile: the softmax scale folds into the copy out of PSUM."""
        b, d = self.b, self.d
        ps = b.alloc((P, P), self.qt.dtype, "psum", name="ps_qt")
        b.nc_transpose(dst=_acc(ps, _ds(0, d), _ds(0, mt)), data=_acc(qn, _ds(0, mt), _ds(0, d)))
        q_t = b.alloc((P, P), self.qt.dtype, name="q_t")
        b.tensor_scalar(
            dst=_acc(q_t, _ds(0, d), _ds(0, mt)),
            data=_acc(ps, _ds(0, d), _ds(0, mt)),
            op0="multiply",
            operand0=self.scale,
            engine=engine,
        )
        return q_t

    def scores(self, st: dict, k_t) -> None:
        """S = (c·Q) Kᵀ into PSUM and −max S per row (VectorE, read from PSUM)."""
        b, d, n, mt = self.b, self.d, self.n, st["mt"]
        rows = _ds(0, mt)
        s = b.alloc((P, MAX_KEYS), F32, "psum", name="scores")
        st["s"] = _acc(s, rows, _ds(0, n))
        for t, c0, cn in k_t:
            b.nc_matmul(
                dst=_acc(s, rows, _ds(c0, cn)),
                stationary=_acc(st["q_t"], _ds(0, d), rows),
                moving=_acc(t, _ds(0, d), _ds(0, cn)),
            )
        st["neg_max"] = b.alloc((P, 1), F32, name="neg_max")
        b.tensor_reduce(
            dst=_acc(st["neg_max"], rows, _ds(0, 1)),
            op="maximum",
            data=st["s"],
            axis=1,
            negate=True,
            keepdims=True,
        )

    def softmax(self, st: dict) -> None:
        """P = exp(S − max S) (unnormalised) and its row sum l, then 1/l (ScalarE)."""
        b, n, mt = self.b, self.n, st["mt"]
        rows, col = _ds(0, mt), _ds(0, 1)
        p = b.alloc((P, MAX_KEYS), F32, name="probs")
        total = b.alloc((P, 1), F32, name="row_sum")
        b.activation(
            dst=_acc(p, rows, _ds(0, n)),
            op="exp",
            data=st["s"],
            bias=_acc(st["neg_max"], rows, col),
            reduce_res=_acc(total, rows, col),
        )
        recip = b.alloc((P, 1), F32, name="recip")
        b.activation(dst=_acc(recip, rows, col), op="reciprocal", data=_acc(total, rows, col))
        st["p"], st["recip"] = p, recip

    def transpose_p(self, st: dict) -> None:
        """Pᵀ chunk c (keys on the partitions) into its own SBUF tile, so the value product of
        chunk c waits only for its copy."""
        b, mt = self.b, st["mt"]
        ps = b.alloc((P, MAX_KEYS), F32, "psum", name="ps_pt")
        for c in range(self.chunks):
            b.nc_transpose(
                dst=_acc(ps, _ds(0, self.kc(c)), _ds(c * P, mt)),
                data=_acc(st["p"], _ds(0, mt), _ds(c * P, self.kc(c))),
            )
        st["p_t"] = []
        for c in range(self.chunks):
            pt = b.alloc((P, P), F32, name="probs_t")
            b.tensor_copy(
                dst=_acc(pt, _ds(0, self.kc(c)), _ds(0, mt)),
                src=_acc(ps, _ds(0, self.kc(c)), _ds(c * P, mt)),
                engine="scalar" if c % 2 == 0 else "vector",
            )
            st["p_t"].append(pt)

    def value_product(self, idx, st: dict, vb, parts: int = 1) -> None:
        """O = P V accumulated over key chunks, scaled by 1/l on its way out of PSUM, stored; in
        ``parts`` column blocks for the last query tile (each with its own PSUM tile, output tile
        and store, scaled on ScalarE: the first block's store overlaps the next block's matmuls,
        which cost the same per column down to 64 columns)."""
        b, mt, dv = self.b, st["mt"], self.dv
        rows = _ds(0, mt)
        recip = st["recip"]
        w = -(-dv // parts)
        for e0 in range(0, dv, w):
            ew = min(w, dv - e0)
            o = b.alloc((P, ew), F32, "psum", name="pv")
            for c in range(self.chunks):
                b.nc_matmul(
                    dst=_acc(o, rows, _ds(0, ew)),
                    stationary=_acc(st["p_t"][c], _ds(0, self.kc(c)), rows),
                    moving=_acc(vb, _ds(0, self.kc(c)), _ds(c * dv + e0, ew)),
                    accumulate=c > 0,
                )
            out = b.alloc((P, ew), self.qt.dtype, name="out")
            b.tensor_scalar(
                dst=_acc(out, rows, _ds(0, ew)),
                data=_acc(o, rows, _ds(0, ew)),
                op0="multiply",
                operand0=_acc(recip, rows, _ds(0, 1)),
                engine="scalar" if parts > 1 else "vector",
            )
            b.dma_copy(dst=self.win(self.o, idx, st["m0"], mt, e0, ew), src=_acc(out, rows, _ds(0, ew)))

    # ---- one batch instance ----------------------------------------------------------------------
    def instance(self, idx) -> None:
        tiles = -(-self.m // P)
        states = [{"m0": t * P, "mt": min(P, self.m - t * P)} for t in range(tiles)]
        # loads in the order compute needs them: K, the query tiles, V
        kn = self.load_k(idx)
        q_nat = [self.load_q(idx, t) for t in range(tiles)]
        vb = self.load_v(idx)

        # Kᵀ and c·Qᵀ while the later query tiles and V arrive; TensorE runs in program order,
        # so a Qᵀ transpose waits there for its load: tile 0's goes between Kᵀ's two parts, and
        # the tiles whose scores come after the first ``LOOKAHEAD`` go after tile 0's scores
        def q_t(t: int) -> None:
            # the first on ScalarE: VectorE copies the first part of Kᵀ then
            states[t]["q_t"] = self.transpose_q(q_nat[t], states[t]["mt"], "vector" if t % 2 else "scalar")

        k_t = self.transpose_k(kn, lambda: q_t(0))
        for t in range(1, min(LOOKAHEAD, tiles)):
            q_t(t)
        held = None  # a softmax emitted after the next TensorE stage (see below)
        for kind, t in tensor_order(tiles, *self.order):
            st = states[t]
            if kind == "S":
                self.scores(st, k_t)
                if t == 0:
                    for later in range(LOOKAHEAD, tiles):
                        q_t(later)
            elif kind == "PT":
                self.transpose_p(st)
            else:
                last = t == tiles - 1 and self.dv >= 2 * MIN_BLOCK
                self.value_product(idx, st, vb, 2 if last else 1)
            # ScalarE / VectorE run in program order: the exp of tile t is ready ~1 us after
            # its scores, later than the copies out of PSUM of the TensorE stage that follows
            # the score matmul, so it goes after them in program order
            if held is not None:
                self.softmax(held)
                held = None
            if kind == "S":
                held = st
        if held is not None:
            self.softmax(held)

    def build(self):
        return build_over_batch(self.b, self.batch, self.instance, self.o)


def pipelined_attention_body(types, scale: float):
    """The NKI kernel of one ``tensor.flash_attention`` that ``short_supported`` accepts: of the
    Tensor engine orders in ``TENSOR_ORDERS``, the one the cost model (perf/schedule.py)
    schedules shortest."""
    best = None
    for order in TENSOR_ORDERS:
        graph = _Kernel(types, scale, order).build()
        sched = Scheduler(TRN2)
        sched.run(graph.body)
        if best is None or sched.makespan < best[0]:
            best = (sched.makespan, graph)
    return best[1]
