"""Matmul lowering: C(..., M, N) = A(..., M, K) @ B(..., K, N) on the Tensor engine.

Per M tile (<= 128 rows) the stationary operand Aᵀ is staged once for every K chunk (K on the
partitions) and reused across all N chunks. N is processed in blocks of PSUM banks (512 fp32
columns each; as many as the PSUM plan leaves room for, psum_plan.py); for every K chunk one B
tile covering the block is loaded and one nc_matmul per bank accumulates into PSUM (the first K
chunk is peeled because ``accumulate`` is a static flag). The block is then copied PSUM -> SBUF
(casting to C's dtype) and stored with one DMA. Operands the Tensor engine cannot read (ints,
bool, e4m3fn) are staged as fp32 / bf16 tiles by the loading DMA (exact for integers while
partial sums stay below 2**24). Batch dims are outer loops; broadcast batch dims read stride-0
views. An operand is brought K-major either by a DMA window in that order, or, when its K dim is
the contiguous one, by a natural load plus a TensorE transpose through PSUM. A standalone matmul
with several M tiles keeps B resident in SBUF (whole, or in column blocks) when a traffic model
says that moves fewer HBM bytes than reloading B per M tile (``MatmulEmitter.n_outer_pays``).
"""

from __future__ import annotations

from ...ir.dtypes import get_dtype
from ...nki.types import Access, Affine, DimSlice
from ...nki.types import ds as _ds
from ...tensor import ops as T
from ...tensor.rules import broadcast_shapes
from .attention_out import KeptRows, stage_a_kept
from .batched_matmul import lower_batched_small
from .context import LowerContext
from .homes import HbmHome
from .instance import LoopSpec
from .loopnest import run_loop_nest
from .matmul_chunks import B_GROUP_CHUNKS, ChunkTiles, ColumnWindow, run_k_segments, split_cols
from .matmul_dma_transpose import (
    DGE_ROWS,
    batch_row,
    dma_transposable,
    load_transposed,
    stage_a_dma,
    tail_source,
    tail_window,
    transposed_source,
)
from .matmul_lead import A_COPY_ENGINE, STRAIGHT_M_TILES, cache_groups, lead_a_groups, lead_block, lead_tiles
from .matmul_prefetch import load_prefetch, standalone_prefetch
from .matmul_rows import merged_rows
from .matmul_stage import b_chunk_home, load_b_part, natural_slice_bytes, stage_a_natural
from .onchip_rows import note_stored, rows_on_chip
from .operand_cast import narrow_matmul_dtypes
from .pipeline_views import split_access_dims
from .psum_plan import matmul_block_banks


def _tile_acc(t, *dims) -> Access:
    return Access(t, tuple(dims))


def _swap_last(h: HbmHome) -> HbmHome:
    perm = list(range(len(h.shape)))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return h.transpose(perm)


def _compute_dtypes(target, a_dt, b_dt):
    """Dtypes the operand tiles are staged in for the Tensor engine (DMAs cast on the way):
    unsupported types (ints, bool, e4m3fn) go to fp32 / bf16, and fp32-class operands only
    pair with fp32-class ones."""
    supported = target.dtypes_of("tensor")

    def native(dt):
        if dt.name in supported:
            return dt
        return get_dtype("bf16") if dt.is_float and dt.itemsize == 1 else get_dtype("f32")

    ca, cb = native(a_dt), native(b_dt)
    fp32 = target.matmul_fp32_class
    if (ca.name in fp32) != (cb.name in fp32):
        ca = ca if ca.name in fp32 else get_dtype("f32")
        cb = cb if cb.name in fp32 else get_dtype("f32")
    return ca, cb


def lower_matmul(
    ctx: LowerContext,
    op: T.MatmulOp,
    *,
    pipe: dict | None = None,
    a_provided: bool = False,
    publish: bool = False,
    store: bool = True,
    run: bool = True,
    epilogue=None,
) -> MatmulEmitter | None:
    """Lower one matmul. Standalone (``run``): its own loop nest, C stored to HBM. As a row
    pipeline participant: A may come from ``pipe`` (a tile of the current row chunk), C may be
    put in ``pipe`` (``publish``) and/or stored (``store``). ``epilogue``: a bias added while
    C's PSUM banks are evacuated (matmul_bias.py); the value computed is then its result."""
    if (
        epilogue is None
        and run
        and store
        and pipe is None
        and not a_provided
        and lower_batched_small(ctx, op)
    ):
        return None
    ctx.at_op(op)
    a_v, b_v = op.operands
    c_v = op.result if epilogue is None else epilogue.result
    ca, cb = narrow_matmul_dtypes(op) or _compute_dtypes(ctx.target, a_v.type.dtype, b_v.type.dtype)
    a_shape = (1,) + a_v.type.shape if a_v.type.rank == 1 else a_v.type.shape
    hb = ctx.home(b_v)
    if b_v.type.rank == 1:
        hb = hb.reshape(hb.shape + (1,))
    m, k = a_shape[-2:]
    n = hb.shape[-1]
    batch = broadcast_shapes(op.name, a_shape[:-2], hb.shape[:-2])
    ha = None
    if not a_provided:
        ha = ctx.home(a_v)
        if a_v.type.rank == 1:
            ha = ha.reshape((1,) + ha.shape)
        ha = ha.broadcast_to(batch + (m, k))
    hb2 = hb  # B as (K, N) when it has no batch dims
    hb = hb.broadcast_to(batch + (k, n))
    hc = staging = home = None
    if store:
        home = ctx.home_for_store(c_v)
        hc = home.reshape(batch + (m, n))
        if hc is None:  # C's home is not contiguous (e.g. a concat slice): compute, then copy
            staging = ctx.alloc_hbm(c_v.type.shape, c_v.type.dtype)
            hc = staging.reshape(batch + (m, n))
    merged = None if pipe is not None or not run else merged_rows(batch, b_v.type.rank, ha, hc, m, k, n)
    if merged is not None:  # A's batch dims are more rows of one matmul (matmul_rows.py)
        ha, hc = merged[0], merged[1] if merged[1] is not None else hc
        m, batch = ha.shape[0], ()
        hb = hb2
    em = MatmulEmitter(
        ctx,
        ha,
        hb,
        hc,
        batch,
        m,
        k,
        n,
        ca,
        cb,
        c_v.type.dtype,
        pipe=pipe,
        a_value=a_v if a_provided else None,
        c_value=c_v if publish else None,
        label=f"{op.name} {ctx.name(c_v)}",
        a_key=a_v if pipe is not None else None,
        tail_ok=run and pipe is None and not a_provided and m <= ctx.partitions,
    )
    em.stored_value = c_v if store and staging is None else None
    em.a_operand = a_v
    em.epilogue = epilogue
    if run:
        if em.n_outer_pays():
            em.run_n_outer()
        else:
            em.prefetch = standalone_prefetch(em)
            run_loop_nest(ctx.b, em.loops, [em])
        if staging is not None:
            ctx.b.dma_copy(dst=Access.whole(ctx.view(home)), src=Access.whole(ctx.view(staging)))
    elif staging is not None:
        raise AssertionError("lowering bug: a pipelined matmul stores into a non-contiguous home")
    return em


class MatmulEmitter:
    """Emits the loop nest described in the module docstring (also as a loop-nest participant)."""

    def __init__(
        self,
        ctx,
        ha,
        hb,
        hc,
        batch,
        m,
        k,
        n,
        a_dt,
        b_dt,
        c_dt,
        *,
        pipe=None,
        a_value=None,
        c_value=None,
        label="",
        a_key=None,
        tail_ok=False,
    ):
        self.ctx, self.b = ctx, ctx.b
        self.batch, self.m, self.k, self.n = batch, m, k, n
        self.a_dt, self.b_dt, self.c_dt = a_dt, b_dt, c_dt
        self.p = ctx.partitions
        self.fmax = ctx.target.psum_bank_fmax
        self.pipe = pipe if pipe is not None else {}
        self.a_value, self.c_value, self.label = a_value, c_value, label
        self.a_key = a_key  # matmuls of one pipeline instance reading the same A share its Aᵀ
        self.store = hc is not None
        self.stored_value = None  # C's tensor value when stored to its own home (onchip_rows.py)
        self.a_operand = None  # A's tensor value (its rows may be held in SBUF, onchip_rows.py)
        self.cache_w: int | None = None  # B resident column block (n_outer_pays)
        self.resident = False  # B loaded once before the loop nest (weights of a row pipeline)
        self.b_resident = None  # that cache tile [p, nk, n]
        self.prefetch = False  # B loaded whole at the start of the only M tile (matmul_prefetch.py)
        # free shape (N/d, d) of the pipeline's C row tile read through a head split
        # (pipeline_views.py); None: (N,)
        self.row_split: tuple[int, int] | None = None
        self.defer_resident = False  # resident B loaded by load_deferred_resident, not prepare
        # the engine evacuating Aᵀ's transposes (matmul_stage.py): ScalarE when B is resident,
        # beside VectorE's evacuation of C (matmul_lead.py)
        self.a_copy_engine = "vector"
        # A's natural slices at the DMA's saturating size even when its whole row block would be
        # one DMA: chosen by cache_width when that is what lets all of B stay resident
        self.narrow_a_slices = False
        self.c_copy_engine = "vector"  # the engine evacuating C's PSUM banks
        self.epilogue = None  # a bias added by the evacuation (matmul_bias.BiasEpilogue)
        self.hb = hb
        # A natural is (batch, M, K), K-major (batch, K, M); B natural (batch, N, K), K-major (batch, K, N)
        homes = {"b_nat": _swap_last(hb), "b_km": hb}
        if ha is not None:
            homes.update({"a_nat": ha, "a_km": _swap_last(ha)})
        if hc is not None:
            homes["c"] = hc
        chunks = b_chunk_home(hb, self.p, k)
        if chunks is not None:
            homes["b_chunks"] = chunks
        a_chunks = None if ha is None else b_chunk_home(homes["a_km"], self.p, k)
        if a_chunks is not None:
            homes["a_chunks"] = a_chunks
        self.nat_homes = {"a": homes.get("a_nat"), "b": homes["b_nat"]}
        # transpose when the operand's K dim is the contiguous one (and it is not fp8)
        self.transpose = {
            "a": ha is not None and m > 1 and ha.strides[-1] == 1 and a_dt.itemsize >= 2,
            "b": n > 1 and hb.strides[-1] != 1 and hb.strides[-2] == 1 and b_dt.itemsize >= 2,
        }
        # ... by DMA transposes where the dtype and shape allow (matmul_dma_transpose.py), else
        # on TensorE through PSUM
        self.dma_t = {
            "a": dma_transposable(self, "a", m, homes.get("a_nat")),
            "b": dma_transposable(self, "b", n, homes["b_nat"]),
        }
        # a partial last K chunk of 32 / 64 columns: B streamed, its last chunk a DMA-transposed
        # 128-column window (matmul_dma_transpose.tail_window)
        self.b_tail = 0 if self.dma_t["b"] else tail_window(self, n, homes["b_nat"], tail_ok)
        if self.b_tail:
            self.dma_t["b"] = True
            homes["b_dmat_tail"] = tail_source(homes["b_nat"], self.p)
        self.a_tail = None  # Aᵀ of the window [K - p, K) of the current M tile (b_tail)
        for which in ("a", "b"):
            if self.dma_t[which]:
                homes[which + "_dmat"] = transposed_source(homes[which + "_nat"], self.p)
        # B tiles K-major store their width as (w / 16, 16) when DMA-transposed (ChunkTiles)
        self.b_split = DGE_ROWS if self.dma_t["b"] else 0
        self.views = {key: ctx.view(h) for key, h in homes.items()}
        # Aᵀ is staged before the accumulators are allocated (its transposes are dead by then);
        # B streamed per K chunk and transposed on chip shares PSUM with them
        banks = matmul_block_banks(ctx.target, n, transposes=self.on_chip("b"))
        self.block = min(n, banks * self.fmax)
        self.loops = [LoopSpec("I", d, 1, e, 0) for d, e in enumerate(batch) if e > 1]
        if m > self.p:
            self.loops.append(LoopSpec("P", len(batch), self.p, m // self.p, m % self.p))

    def on_chip(self, which: str) -> bool:
        """True when operand ``which`` is transposed on TensorE (through PSUM)."""
        return self.transpose[which] and not self.dma_t[which]

    # ---- participant of a loop nest ----------------------------------------------------------------
    def prepare(self) -> None:
        if self.epilogue is not None:
            self.epilogue.load(self.ctx, self.n, min(self.m, self.p))
        if self.resident and self.resident_level() == 0 and not self.defer_resident:
            self._load_resident([0] * len(self.batch))

    def stage_a_early(self, inst: dict) -> None:
        """Stage Aᵀ of the row instance ``inst`` now (kept in the pipeline table for the
        matmuls of that instance: pipeline_skew.py)."""
        self.ctx.at(self.label)
        self._stage_a(inst["idx"], inst["m0"], inst["mt"])

    def load_deferred_resident(self) -> None:
        """Load B resident now (its loop nest is emitted straight: pipeline_skew.py)."""
        self._load_resident([0] * len(self.batch))

    def _load_resident(self, idx: list) -> None:
        self.ctx.at(self.label)
        nk = -(-self.k // self.p)
        self.b_resident = ChunkTiles.alloc(
            self.b, self.p, nk, self.n, self.b_dt, "w_resident", B_GROUP_CHUNKS, split=self.b_split
        )
        self._load_b_cache(self.b_resident, idx, 0, self.n)

    def resident_level(self) -> int:
        """The loop level B is loaded at when resident: after the last batch loop along which
        B varies (0: before the nest; GQA: per KV head, shared by its query heads)."""
        level = 0
        for i, lp in enumerate(self.loops):
            if lp.kind == "I" and self.hb.strides[lp.dim] != 0:
                level = i + 1
        return level

    def resident_reuse(self) -> int:
        """How many loop instances read one resident copy of B."""
        trips = 1
        for lp in self.loops[self.resident_level() :]:
            trips *= lp.n_full + (1 if lp.kind == "P" and lp.rem else 0)
        return trips

    def resident_bytes(self) -> int | None:
        """SBUF bytes per partition of B resident while the loops inside its level run, or
        None when only one loop instance would read it."""
        if self.resident_reuse() < 2:
            return None
        return -(-self.k // self.p) * self.n * self.b_dt.itemsize

    def b_bytes(self) -> int:
        """HBM bytes of B per batch instance."""
        return self.k * self.n * self.b_dt.itemsize

    def m_tiles(self) -> int:
        return -(-self.m // self.p)

    def top_instance(self) -> dict:
        return {"idx": [0] * len(self.batch), "m0": 0, "mt": min(self.m, self.p)}

    def enter(self, inst: dict, level: int, offset, extent: int) -> dict:
        lp = self.loops[level]
        out = {"idx": list(inst["idx"]), "m0": inst["m0"], "mt": inst["mt"]}
        if lp.kind == "I":
            out["idx"][lp.dim] = offset
        else:
            out["m0"], out["mt"] = offset, extent
        return out

    def before(self, level: int, inst: dict) -> None:
        if self.resident and level == self.resident_level() and level > 0:
            self._load_resident(inst["idx"])
        if level == len(self.loops):
            self.ctx.at(self.label)
            self._m_tile(inst["idx"], inst["m0"], inst["mt"])

    def after(self, _level: int, _inst: dict) -> None:
        return None

    # ---- standalone loop order: a traffic model picks M tiles outside or B resident --------------
    def _bytes(self, dt, n_elems: int) -> int:
        return n_elems * dt.itemsize

    def traffic(self, cache_w: int | None) -> int:
        """HBM bytes of A and B for one batch instance: ``None`` = M tiles outside (Aᵀ staged
        once per M tile, B reloaded for every M tile); ``w`` = B resident in SBUF in column
        blocks of ``w`` (each loaded once), A reloaded once per block."""
        a_bytes = self._bytes(self.a_dt, self.m * self.k)
        b_bytes = self._bytes(self.b_dt, self.k * self.n)
        if cache_w is None:
            return a_bytes + b_bytes * -(-self.m // self.p)
        return a_bytes * -(-self.n // cache_w) + b_bytes

    def cache_width(self) -> int | None:
        """The B column block resident in SBUF: all of N when it fits, else the fewest blocks of
        equal width (a multiple of 128 columns) that fit 7/8 of SBUF beside this loop nest's
        other tiles, each with a second (rotating) buffer: Aᵀ of one M tile, one C block and
        (A transposed on chip) one natural slice of A. None when not even 128 columns fit."""
        nk = -(-self.k // self.p)
        tg = self.ctx.target
        others = 2 * nk * self.p * self.a_dt.itemsize + 2 * self.block * self.c_dt.itemsize
        room = (tg.sbuf_bytes_per_partition * 7) // 8 - others
        per_col = nk * self.b_dt.itemsize
        if self.on_chip("a"):
            wide, narrow = (2 * natural_slice_bytes(tg, self.k, self.a_dt.itemsize, w) for w in (True, False))
            # narrower slices of A when that keeps all of B resident: A is then read and
            # transposed once, not once per column block of B
            self.narrow_a_slices = per_col * self.n > room - wide and per_col * self.n <= room - narrow
            room -= narrow if self.narrow_a_slices else wide
        if room < per_col * min(self.n, self.p):
            return None
        if per_col * self.n <= room:
            return self.n
        widest = (room // per_col) // self.p * self.p
        blocks = -(-self.n // widest)
        return -(-self.n // (blocks * self.p)) * self.p

    def n_outer_pays(self) -> bool:
        """True when B resident (``cache_width``) moves fewer HBM bytes than M tiles outside
        (ties go to B resident only when there are several M tiles)."""
        self.cache_w = None
        if -(-self.m // self.p) < 2:
            return False
        w = self.cache_width()
        if w is None or self.traffic(w) >= self.traffic(None):
            return False
        self.cache_w = w
        return True

    def run_n_outer(self) -> None:
        if self.epilogue is not None:
            self.epilogue.load(self.ctx, self.n, min(self.m, self.p))
        self.ctx.at(self.label)
        self.a_copy_engine = A_COPY_ENGINE
        self.block = lead_block(self)

        def batch_level(d: int, idx: list) -> None:
            if d == len(self.batch):
                self._instances(self.n, self.cache_w, lambda n0, w, _: self._b_cached_block(idx, n0, w))
            elif self.batch[d] == 1:
                batch_level(d + 1, idx + [0])
            else:
                with self.b.fori_loop(0, self.batch[d]) as i:
                    batch_level(d + 1, idx + [i])

        batch_level(0, [])

    def _b_cached_block(self, idx, n0, w: int) -> None:
        """B's columns [n0, n0 + w) loaded once into SBUF (K on the partitions), one cache per
        PSUM block of columns, then every M tile: Aᵀ staged once and one PSUM block at a time.
        The lead M tiles (matmul_lead.py) are peeled, their Aᵀ loaded between B's groups (so
        their loads are not served after all of B: the DMA engines serve transfers in order of
        readiness), and they run jointly, each K chunk of B feeding all of them as it arrives.
        Up to ``STRAIGHT_M_TILES`` M tiles are straight code, each tile's Aᵀ staged before the
        previous tile's evacuation and store (a store waits for the matmuls; a load queued
        behind it on the in-order DMA queues would too)."""
        nk = -(-self.k // self.p)
        lead = lead_tiles(self, w)
        caches = {
            j: ChunkTiles.alloc_sizes(
                self.b,
                self.p,
                nk,
                min(self.block, w - j),
                self.b_dt,
                "b_cache",
                cache_groups(nk),
                split=self.b_split,
            )
            for j in range(0, w, self.block)
        }
        leads = self._load_leads(idx, n0, w, lead, caches)

        def blocks(tiles, between=None):
            for j in range(0, w, self.block):
                last = j + self.block >= w
                wj = min(self.block, w - j)
                self._n_block(
                    idx,
                    tiles,
                    Affine.of(n0) + j,
                    wj,
                    None,
                    b_cache=(caches[j], 0),
                    between=between if last else None,
                )

        def stage(t):
            mt = min(self.p, self.m - t * self.p)
            return (self._stage_a(idx, t * self.p, mt), t * self.p, mt)

        n_tiles = self.m_tiles()
        if n_tiles <= STRAIGHT_M_TILES:  # every tile peeled, its Aᵀ staged one tile ahead
            staged = dict(enumerate(leads))

            def ahead(t):
                return None if t >= n_tiles else lambda: staged.__setitem__(t, stage(t))

            blocks(leads, ahead(lead))
            for t in range(lead, n_tiles):
                blocks([staged.pop(t)], ahead(t + 1))
            return
        follower = []  # the next M tile's Aᵀ, staged before the lead tiles' stores
        blocks(leads, lambda: follower.append(stage(lead)))
        blocks(follower)

        def m_tile(m0, mt, _first):
            blocks([(self._stage_a(idx, m0, mt), m0, mt)])

        self._instances(self.m, self.p, m_tile, skip=lead + len(follower))

    def _load_leads(self, idx, n0, w: int, lead: int, caches: dict) -> list:
        """Stage the ``lead`` tiles' Aᵀ and load B's ``caches`` (PSUM block offset -> ChunkTiles)
        in the order the joint matmuls read them: each Aᵀ group loaded by DMAs alone
        (``_a_group_loads``) goes just before the first group of B that needs it, others
        before all of B. Returns the leads as [(Aᵀ, m0, mt)]."""
        leads, pending = [], []  # pending: (first chunk, tile, load) of the leads' Aᵀ groups
        joint = self._a_group_loads(idx, 0, lead * self.p) if lead > 1 and lead * self.p <= self.m else None
        if joint is not None:  # all leads' Aᵀ in one tile per group: one DMA, longer runs
            leads = [(ColumnWindow(joint[0], t * self.p), t * self.p, self.p) for t in range(lead)]
            pending = [(c0, 0, load) for c0, load in joint[1]]
            lead = 0
        for t in range(lead):
            m0, mt = t * self.p, min(self.p, self.m - t * self.p)
            split = self._a_group_loads(idx, m0, mt)
            if split is None:
                leads.append((self._stage_a(idx, m0, mt), m0, mt))
                continue
            leads.append((split[0], m0, mt))
            pending += [(c0, t, load) for c0, load in split[1]]
        pending.sort(key=lambda x: (x[0], x[1]))
        for j, cache in caches.items():
            for tile, c0, c1 in cache.parts:
                while pending and pending[0][0] < c1:
                    pending.pop(0)[2]()
                load_b_part(self, tile, c0, c1, idx, Affine.of(n0) + j, min(self.block, w - j))
        for _, _, load in pending:
            load()
        return leads

    def _load_b_cache(self, cache, idx, n0, w: int) -> None:
        """B's columns [n0, n0 + w) into ``cache`` (ChunkTiles of [p, chunks, w]), K on the
        partitions: one DMA per tile for its full chunks (matmul_stage.load_b_part)."""
        for tile, c0, c1 in cache.parts:
            load_b_part(self, tile, c0, c1, idx, n0, w)

    # ---- loop helpers -----------------------------------------------------------------------------
    def _instances(self, n: int, size: int, body, *, skip: int = 0) -> None:
        """body(offset, extent, first) over chunks of ``size`` after the first ``skip`` (the
        remainder counts as a chunk): full chunks in a fori_loop, then a static remainder."""
        full, rem = n // size, n % size
        if skip > full:
            return
        start = skip
        if full - start == 1:
            body(start * size, size, False)
        elif full - start > 1:
            with self.b.fori_loop(start, full) as c:
                body(c * size, size, False)
        if rem:
            body(full * size, rem, False)

    def _window(self, key: str, idx: list, r0, rn: int, c0, cn: int) -> Access:
        dims = [_ds(i, 1) for i in idx] + [_ds(r0, rn), _ds(c0, cn)]
        return Access(self.views[key], tuple(dims))

    def _transpose_into(self, dst: Access, src: Access, kt: int, w: int) -> None:
        """dst [kt, w] (SBUF) = transpose of src [w, kt] (SBUF) through PSUM."""
        ps = self.b.alloc((self.p, self.p), src.tensor.type.dtype, "psum", name="ps_t")
        self.b.nc_transpose(dst=_tile_acc(ps, _ds(0, kt), _ds(0, w)), data=src)
        self.b.tensor_copy(dst=dst, src=_tile_acc(ps, _ds(0, kt), _ds(0, w)))

    def _kmajor(self, dst: Access, which: str, idx, k0, kt: int, x0, xw: int, dt) -> None:
        """Fill ``dst`` [kt, xw] with the operand's K chunk on the partitions."""
        if not self.transpose[which]:
            self.b.dma_copy(dst=dst, src=self._window(which + "_km", idx, k0, kt, x0, xw))
            return
        src_dt = self.views[which + "_nat"].type.dtype  # an operand cast: transpose 16-bit, cast after
        nat_dt = src_dt if dt.name == "f32" and src_dt.name in ("bf16", "f16") else dt
        for j in range(0, xw, self.p):
            w = min(self.p, xw - j)
            nat = self.b.alloc((self.p, kt), nat_dt, "sbuf", name=which + "_nat")
            self.b.dma_copy(
                dst=_tile_acc(nat, _ds(0, w), _ds(0, kt)),
                src=self._window(which + "_nat", idx, Affine.of(x0) + j, w, k0, kt),
            )
            last = dst.dims[-1]
            sub = Access(dst.tensor, dst.dims[:-1] + (DimSlice(last.offset + j, w, 1),))
            self._transpose_into(sub, _tile_acc(nat, _ds(0, w), _ds(0, kt)), kt, w)

    def _held_a(self, nk: int, mt: int) -> Access | None:
        """A of one row held in SBUF (onchip_rows.py) as ``nk`` rows of ``p`` elements (row c
        holding A[0, c·p : (c+1)·p]), in A's dtype, at the kernel's top level: its transpose is
        Aᵀ [p, nk]."""
        a = self.a_operand
        if a is None or self.batch or mt != 1 or self.m != 1 or self.k != nk * self.p or nk > self.p:
            return None
        if len(self.b._blocks) != 1:
            return None
        held = rows_on_chip(self.ctx, a, nk)
        ok = held is not None and held.free_size == self.p and held.dtype == self.a_dt
        return held if ok and held.dtype.name in self.ctx.target.dtypes_of("tensor") else None

    def _a_from_tile(self, dst: Access, a_tile, k0, kt: int, mt: int, m0=0) -> None:
        """Fill ``dst`` [kt, mt] from the row tile of A [mt, K] on chip (TensorE transposes), or
        from rows ``m0``.. of A held for every row (attention_out.KeptRows)."""
        if isinstance(a_tile, KeptRows):
            src = a_tile.rows(m0, mt, k0, kt)
        else:
            src = _tile_acc(a_tile, _ds(0, mt), _ds(k0, kt))
        dt = src.tensor.type.dtype
        if dt.name not in self.ctx.target.dtypes_of("tensor") or dt.itemsize < 2:
            conv = self.b.alloc((self.p, kt), self.a_dt, "sbuf", name="a_conv")
            self.b.tensor_copy(dst=_tile_acc(conv, _ds(0, mt), _ds(0, kt)), src=src)
            src = _tile_acc(conv, _ds(0, mt), _ds(0, kt))
        self._transpose_into(dst, src, kt, mt)

    # ---- one M tile ---------------------------------------------------------------------------------
    def _a_group_loads(self, idx, m0, mt: int):
        """Aᵀ of a standalone matmul's M tile staged by DMAs alone (DMA transposes, or a K-major
        A read directly), as (ChunkTiles, [(first chunk, load)]) with the loads not yet issued:
        one per tile of ``lead_a_groups`` chunks. None when staging needs more (TensorE
        transposes, a pipeline's row tile, a partial K chunk)."""
        if self.a_value is not None or self.a_key is not None or self.k % self.p:
            return None
        nk = self.k // self.p
        if self.dma_t["a"]:
            at = ChunkTiles.alloc_sizes(
                self.b, self.p, nk, mt, self.a_dt, "a_t", lead_a_groups(nk), split=DGE_ROWS
            )
            src = self.views["a_dmat"]

            def dma_t(tile, c0, c1):
                r0 = batch_row(self, "a", idx, m0)
                return lambda: load_transposed(self.b, src, tile, c0, c1 - c0, r0, mt, self.p)

            return at, [(c0, dma_t(tile, c0, c1)) for tile, c0, c1 in at.parts]
        if self.transpose["a"] or "a_chunks" not in self.views:
            return None
        at = ChunkTiles.alloc_sizes(self.b, self.p, nk, mt, self.a_dt, "a_t", lead_a_groups(nk))
        lead = tuple(_ds(i, 1) for i in idx)

        def copy(tile, c0, c1):
            src = Access(self.views["a_chunks"], lead + (_ds(0, self.p), _ds(c0, c1 - c0), _ds(m0, mt)))
            return lambda: self.b.dma_copy(dst=Access.whole(tile), src=src)

        return at, [(c0, copy(tile, c0, c1)) for tile, c0, c1 in at.parts]

    def _stage_a(self, idx, m0, mt: int):
        """Aᵀ for every K chunk of this M tile: [p, nk, mt] (shared by matmuls of one pipeline
        instance that read the same A)."""
        a_id = self.a_value if self.a_value is not None else self.a_key
        instance = (Affine.of(m0), mt, tuple(Affine.of(i) for i in idx))
        key = ("a_t", a_id, self.a_dt.name, instance) if a_id is not None else None
        if key is not None and key in self.pipe:
            return self.pipe[key]
        nk = -(-self.k // self.p)
        a_tile = self.pipe.get(self.a_value) if self.a_value is not None else None
        if isinstance(a_tile, KeptRows):  # held for every row (attention_out.py)
            at = stage_a_kept(self, a_tile, m0, mt)
            if key is not None:
                self.pipe[key] = at
            return at
        if a_tile is None and self.transpose["a"]:
            # DMA transposes (matmul_dma_transpose.py) or wide natural loads (matmul_stage.py)
            at = stage_a_dma(self, idx, m0, mt) if self.dma_t["a"] else stage_a_natural(self, idx, m0, mt)
            if key is not None:
                self.pipe[key] = at
            return at
        tile = self.b.alloc((self.p, nk, mt), self.a_dt, "sbuf", name="a_t")
        held = self._held_a(nk, mt) if a_tile is None else None
        if held is not None:  # A's one row held as nk rows of p (onchip_rows.py): one transpose
            self._transpose_into(Access(tile, (_ds(0, self.p), _ds(0, nk), _ds(0, 1))), held, self.p, nk)
            at = ChunkTiles.one(tile, nk)
            if key is not None:
                self.pipe[key] = at
            return at

        def stage(k0, kt, _first):
            dst = Access(tile, (_ds(0, kt), DimSlice(_chunk_index(k0, self.p), 1, 1), _ds(0, mt)))
            if a_tile is not None:
                self._a_from_tile(dst, a_tile, k0, kt, mt, m0)
            else:
                self._kmajor(dst, "a", idx, k0, kt, m0, mt, self.a_dt)

        if a_tile is None and not self.transpose["a"] and "a_chunks" in self.views:
            # Aᵀ read K-major from HBM: one DMA for all full chunks (DMAs writing one tile
            # wait for each other), then the partial last chunk
            full = self.k // self.p
            src = Access(
                self.views["a_chunks"],
                tuple(_ds(i, 1) for i in idx) + (_ds(0, self.p), _ds(0, full), _ds(m0, mt)),
            )
            self.b.dma_copy(dst=Access(tile, (_ds(0, self.p), _ds(0, full), _ds(0, mt))), src=src)
            if self.k % self.p:
                stage(full * self.p, self.k % self.p, False)
        else:
            self._instances(self.k, self.p, stage)
        at = ChunkTiles.one(tile, nk)
        if key is not None:
            self.pipe[key] = at
        return at

    def _m_tile(self, idx, m0, mt: int) -> None:
        at = self._stage_a(idx, m0, mt)
        if self.b_tail:
            self._stage_a_tail(idx, m0, mt)
        # issued after Aᵀ's loads; the queues run ahead of Aᵀ's compute chain
        pieces = load_prefetch(self, idx) if self.prefetch else None
        row = None
        if self.c_value is not None:  # the whole C row tile stays on chip for the pipeline
            free = self.row_split if self.row_split is not None else (self.n,)
            row = self.b.alloc((mt,) + free, self.c_dt, "sbuf", name=self.c_value.name_hint or "c")
            self.pipe[self.c_value] = row

        def block(n0, w, _first):
            cache = None if self.b_resident is None else (self.b_resident, n0)
            self._n_block(idx, [(at, m0, mt)], n0, w, row, b_cache=cache)

        if pieces is not None:  # prefetched B: static N blocks, each reading its own tiles
            for n0, tiles in pieces.items():
                w = min(self.block, self.n - n0)
                self._n_block(idx, [(at, m0, mt)], n0, w, row, b_cache=(tiles, 0))
        else:
            self._instances(self.n, self.block, block)
        if row is not None and self.store:
            src = self._cols(row, mt, 0, self.n)
            self.b.dma_copy(dst=self._window("c", idx, m0, mt, 0, self.n), src=src)
            self._note_whole(src)

    def _stage_a_tail(self, idx, m0, mt: int) -> None:
        """Aᵀ of the K window [K - p, K) of the M tile (``b_tail``): its last ``b_tail``
        partitions are the partial chunk, on the partitions of B's DMA-transposed window."""
        self.a_tail = self.b.alloc((self.p, mt), self.a_dt, "sbuf", name="a_tail")
        dst = _tile_acc(self.a_tail, _ds(0, self.p), _ds(0, mt))
        self._kmajor(dst, "a", idx, self.k - self.p, self.p, m0, mt, self.a_dt)

    def _tail_step(self, tiles, banks, chunks, n0, w: int, kt: int, first: bool, acc) -> None:
        """The partial last K chunk (``kt`` = ``b_tail`` columns) of a block: B's window
        [K - p, K) by one DMA transpose, the matmuls contracting over its last ``kt``
        partitions against Aᵀ's same window (matmul_dma_transpose.tail_window)."""
        bt = self.b.alloc((self.p, 1, w // DGE_ROWS, DGE_ROWS), self.b_dt, "sbuf", name="b_tail")
        load_transposed(self.b, self.views["b_dmat_tail"], bt, 0, 1, n0, w, self.p)
        lo = self.p - kt
        for (_at, _m0, mt), tbanks in zip(tiles, banks):
            stat = _tile_acc(self.a_tail, _ds(lo, kt), _ds(0, mt))
            for (j, nj), ps in zip(chunks, tbanks):
                mov = _tile_acc(bt, _ds(lo, kt), _ds(0, 1), *split_cols(_ds(j, nj), DGE_ROWS))
                self.b.nc_matmul(dst=acc(ps, mt, nj), stationary=stat, moving=mov, accumulate=not first)

    def _n_block(self, idx, tiles: list, n0, w: int, row, b_cache=None, between=None) -> None:
        """One PSUM block of columns [n0, n0 + w) for the M tiles ``tiles`` = [(Aᵀ, m0, mt)]
        (several: the lead tiles, run jointly over each K chunk of B), each accumulated in
        its own banks, then (after ``between()``, when given) evacuated and stored (or, in a
        pipeline, copied into ``row``)."""
        chunks = [(j, min(self.fmax, w - j)) for j in range(0, w, self.fmax)]
        split = self.row_split if row is not None else None
        bank = (self.p, self.fmax) if split is None else (self.p, self.fmax // split[1], split[1])
        banks = [[self.b.alloc(bank, "f32", "psum", name="acc") for _ in chunks] for _ in tiles]

        def acc(ps, mt, nj):
            return _tile_acc(ps, _ds(0, mt), _ds(0, nj)) if split is None else self._cols(ps, mt, 0, nj)

        nk, full = -(-self.k // self.p), self.k // self.p

        def kstep(c, seg, first):
            kt = self.p if seg < full else self.k - full * self.p
            if b_cache is None and self.b_tail and seg == full:  # the window [K - p, K)
                self._tail_step(tiles, banks, chunks, n0, w, kt, first, acc)
                return
            if b_cache is None and self.dma_t["b"]:  # one DMA transpose per K chunk
                bt = self.b.alloc((self.p, 1, w // DGE_ROWS, DGE_ROWS), self.b_dt, "sbuf", name="b_k")
                r0 = batch_row(self, "b", idx, n0)
                load_transposed(self.b, self.views["b_dmat"], bt, c, 1, r0, w, self.p)

                def moving(j, nj):
                    return _tile_acc(bt, _ds(0, kt), _ds(0, 1), *split_cols(_ds(j, nj), DGE_ROWS))
            elif b_cache is None:
                bt = self.b.alloc((self.p, w), self.b_dt, "sbuf", name="b_k")
                k0 = c * self.p if not isinstance(c, int) else c * self.p
                self._kmajor(_tile_acc(bt, _ds(0, kt), _ds(0, w)), "b", idx, k0, kt, n0, w, self.b_dt)

                def moving(j, nj):
                    return _tile_acc(bt, _ds(0, kt), _ds(j, nj))
            else:
                cache, c0 = b_cache

                def moving(j, nj):
                    return cache.access(c, seg, kt, _ds(Affine.of(c0) + j, nj))

            for (at, _m0, mt), tbanks in zip(tiles, banks):
                stat = at.access(c, seg, kt, _ds(0, mt))
                for (j, nj), ps in zip(chunks, tbanks):
                    self.b.nc_matmul(
                        dst=acc(ps, mt, nj),
                        stationary=stat,
                        moving=moving(j, nj),
                        accumulate=not first,
                    )

        operands = tuple(t[0] for t in tiles) + (None if b_cache is None else b_cache[0],)
        run_k_segments(self.b, nk, full, operands, kstep)
        if between is not None:
            between()
        self._evacuate_block(idx, tiles, banks, chunks, n0, w, row, acc)

    def _evacuate_block(self, idx, tiles, banks, chunks, n0, w: int, row, acc) -> None:
        """Copy the block's PSUM banks of every M tile out: into the pipeline's C row tile
        ``row``, or into a C tile stored with one DMA."""
        for (_at, m0, mt), tbanks in zip(tiles, banks):
            if row is not None:
                for (j, nj), ps in zip(chunks, tbanks):
                    col = Affine.of(n0) + j
                    self._evacuate(self._cols(row, mt, col, nj), acc(ps, mt, nj), col, nj, mt)
                continue
            # with a bias epilogue and one M tile, exactly C's rows: the tile then holds C + b
            # whole, for a later item to read in place (topk_onchip.py)
            one = self.epilogue is not None and self.m <= self.p and not self.batch
            ct = self.b.alloc((mt if one else self.p, w), self.c_dt, "sbuf", name="c")
            for (j, nj), ps in zip(chunks, tbanks):
                dst = _tile_acc(ct, _ds(0, mt), _ds(j, nj))
                self._evacuate(dst, _tile_acc(ps, _ds(0, mt), _ds(0, nj)), Affine.of(n0) + j, nj, mt)
            src = _tile_acc(ct, _ds(0, mt), _ds(0, w))
            self.b.dma_copy(dst=self._window("c", idx, m0, mt, n0, w), src=src)
            self._note_whole(src)

    def _evacuate(self, dst: Access, src: Access, col0, ncols: int, mt: int) -> None:
        """C's columns [col0, col0 + ncols) from their PSUM bank into ``dst``, adding the bias
        when there is an epilogue."""
        if self.epilogue is not None:
            self.epilogue.evacuate(self.b, dst, src, col0, ncols, mt)
        else:
            self.b.tensor_copy(dst=dst, src=src, engine=self.c_copy_engine)

    def _note_whole(self, src: Access) -> None:
        """A stored C tile holding all of C at the kernel's top level: later items may read it
        there (onchip_rows.py)."""
        v = self.stored_value
        if v is not None and src.size == v.type.size:
            note_stored(self.ctx, v, src, top_level=len(self.b._blocks) == 1)

    def _cols(self, t, mt: int, col0, ncols: int) -> Access:
        """Columns [col0, col0 + ncols) of rows [0, mt) of a C row tile or PSUM bank, which is
        (rows, N) or, under a head split, (rows, N/d, d)."""
        if len(t.type.shape) == 2:
            return _tile_acc(t, _ds(0, mt), _ds(col0, ncols))
        inner = t.type.shape[-1]
        start, n = split_access_dims(col0, ncols, inner)
        return _tile_acc(t, _ds(0, mt), _ds(start, n), _ds(0, inner))


def _chunk_index(k0, p: int) -> Affine:
    """Index of the chunk starting at ``k0`` (a constant multiple of p or ``c * p``)."""
    a = Affine.of(k0)
    return Affine(a.const // p, tuple((v, c // p) for v, c in a.terms))
