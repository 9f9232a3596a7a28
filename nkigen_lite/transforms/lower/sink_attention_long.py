"""``tensor.sink_attention`` over more keys than one PSUM bank of scores holds (> 512): an
online softmax over key blocks, in one ``fori_loop`` over the KV heads.

The layout, the units and the on-chip masks are sink_attention.py's (``r`` rows of a head per
partition, a unit = 128 queries of one head block against one KV head). What changes:

- **One loop over the KV heads.** K and V of KV head ``g`` (the loop index) are loaded once
  (one DMA each, keys on the partitions: key ``c·128 + p`` at ``[p, c]``; K and V stay resident
  in SBUF for every query tile of the head — ``resident_bytes`` per partition), Kᵀ by TensorE
  transposes (a PSUM bank of chunks, 8 in 16 bits, per copy). Per 128-row query tile, Q of the
  head's ``R`` query heads comes in one DMA and O leaves in one. The query tiles and head blocks
  are unrolled in the loop body (their key ranges differ), which is list-scheduled; a few KV
  heads share an iteration when they are small (``heads_per_iteration``), so one head's loads
  overlap the previous head's drain.
- **Key blocks.** A block's visible key chunks (causal: up to its diagonal; with a window,
  from the window's first key) are visited in blocks of ``chunks_per_key_block`` chunks (``r``
  units' scores of one key block fill at most two PSUM banks); chunks no query of the block sees
  are never computed. Only chunks partly visible get the mask (``I · M`` accumulated through the
  Tensor engine, the constant tiles built by GpSimd ``affine_select`` once, before the loop).
- **Online softmax with the sink in the max.** The running stabiliser starts at the sink:
  ``-m₀ = min(-scale·max S₀, -sink)``; each later key block ``-m' = min(-scale·max S, -m)``,
  ``α = exp(m - m')``, ``P = exp(scale·S - m')`` in the input dtype, ``[O | l]`` of the block
  ``= Pᵀᵀ [V | 1]`` in PSUM, and the SBUF accumulator ``A = A·α + [O | l]`` (the product on
  GpSimd, the sum on VectorE reading PSUM). At the end ``O = A[:, :Dv] / (l + exp(sink - m))``:
  the sink joins the max and the denominator and has no value row — exactly the model's
  ``softmax(concat([S, sink]))[..., :N] @ V``.

Limits (``long_supported`` / ``long_limit_message``): K, V and Kᵀ of one KV head resident in
``SBUF_RESIDENT_BYTES`` per partition, and at most ``MAX_BODY_CHUNKS`` visible (unit, key
chunk) pairs in the unrolled loop body (compile time; gpt-oss causal at 4096 keys has 4,224).
"""

from __future__ import annotations

from ...nki.target import TRN2
from ...nki.types import Affine
from ...nki.types import access_of as _acc
from ...nki.types import ds as _ds
from .attention_units import advance
from .deallocs import insert_deallocs
from .emit_order import list_order
from .sink_attention import F32, MAX_KEYS, P, _Kernel

KEY_BLOCK_ELEMS = 1024  # r units x key-block width: the scores of a key block in <= 2 PSUM banks
MAX_BODY_CHUNKS = 4608  # visible (unit, key chunk) pairs in the unrolled loop body
SBUF_RESIDENT_BYTES = 96 * 1024  # K, Kᵀ and [V | 1] of one KV head, per partition
UNROLL_PAIRS = 640  # visible pairs of the KV heads unrolled together (compile time)
MAX_IN_FLIGHT = 4  # blocks emitted side by side in the software pipeline


def chunks_per_key_block(r: int) -> int:
    """128-key chunks per key block for ``r`` rows per partition: ``r · 128 · chunks`` scores of
    one key block fill at most ``KEY_BLOCK_ELEMS`` fp32 per partition (two PSUM banks), at most
    one bank per unit."""
    return max(1, min(MAX_KEYS // P, KEY_BLOCK_ELEMS // (r * P)))


def resident_bytes(n: int, d: int, dv: int, itemsize: int) -> int:
    """SBUF bytes per partition one KV head holds: K as loaded, Kᵀ, [V | 1]."""
    nc = -(-n // P)
    return itemsize * (nc * d + n + nc * (dv + 1))


def visible_pairs(m: int, window: int, units_per_tile: int) -> int:
    """(unit, 128-key chunk) pairs with a visible key, per KV head: the loop body's size."""
    total = 0
    for m0 in range(0, m, P):
        last = min(m, m0 + P) - 1
        first = max(0, m0 - window + 1) if window else 0
        total += units_per_tile * (last // P - first // P + 1)
    return total


def long_limit_message(m: int, n: int, d: int, dv: int, itemsize: int, window: int, rep: int) -> str | None:
    """Why the long kernel cannot take the shape (with the numbers), or None when it can."""
    res = resident_bytes(n, d, dv, itemsize)
    if res > SBUF_RESIDENT_BYTES:
        return (
            f"K, Kᵀ and V of one KV head need {res} B per partition at {n} keys, more than the "
            f"{SBUF_RESIDENT_BYTES} B the kernel keeps resident"
        )
    pairs = visible_pairs(m, window, rep)
    if pairs > MAX_BODY_CHUNKS:
        return (
            f"{pairs} visible (query head x 128-row tile, 128-key chunk) pairs per KV head exceed "
            f"the {MAX_BODY_CHUNKS} the unrolled loop body takes"
        )
    return None


def heads_per_iteration(g: int, pairs: int) -> int:
    """KV heads unrolled per loop iteration (so one head's loads and fill overlap the previous
    head's drain in the list schedule): the most dividing ``g`` whose visible (unit, key chunk)
    pairs (``pairs`` per KV head) stay within ``UNROLL_PAIRS``, at least one."""
    return max(u for u in range(1, g + 1) if g % u == 0 and (u == 1 or u * pairs <= UNROLL_PAIRS))


class _LongKernel(_Kernel):
    """Builds the long-key kernel (module docstring) for one operand signature."""

    def __init__(self, types, attrs):
        super().__init__(types, attrs)
        self.nb = self.rep // self.r  # head blocks per KV head
        self.bc = chunks_per_key_block(self.r)
        self._blk = None

    def engine(self, n: int, fast: bool) -> str:
        """sink_attention's choice, with the busy times followed into the loop body (the walk
        restarts at the first op of the block being emitted)."""
        blk = self.b._blocks[-1]
        if blk is not self._blk and blk.first is not None:
            self._blk, self._seen = blk, _Before(blk.first)
        return super().engine(n, fast)

    # ---- views made before the loop (kernel level) --------------------------------------------
    def make_views(self) -> None:
        b, n, d, dv, g = self.b, self.n, self.d, self.dv, self.g
        nf = n // P  # full chunks
        self.kview = b.hbm_view(self.k, (g, P, nf, d), (n * d, d, P * d, 1), name="k_rows") if nf else None
        self.vview = (
            b.hbm_view(self.v, (g, P, nf, dv), (n * dv, dv, P * dv, 1), name="v_rows") if nf else None
        )
        tail = n - nf * P
        self.ktail = self.vtail = None
        if tail:
            self.ktail = b.hbm_view(self.k, (g, tail, d), (n * d, d, 1), offset=nf * P * d, name="k_tail")
            self.vtail = b.hbm_view(self.v, (g, tail, dv), (n * dv, dv, 1), offset=nf * P * dv, name="v_tail")
        self.qviews, self.oviews = [], []
        for m0 in range(0, self.m, P):
            rows = min(P, self.m - m0)
            self.qviews.append(self.tile_view(self.q, m0, rows, self.d, "q_tile"))
            self.oviews.append(self.tile_view(self.o, m0, rows, self.dv, "o_tile"))

    def tile_view(self, x, m0: int, rows: int, width: int, name: str):
        """(KV head, head in block, partition row, block, row offset, feature) of the query
        tile at ``m0`` (``r`` rows per partition): the KV head dim is indexed by the loop."""
        r, m, rep = self.r, self.m, self.rep
        pph = rows if r == 1 else self.pph
        return self.b.hbm_view(
            x,
            (self.g, r, pph, self.nb, r, width),
            (rep * m * width, m * width, r * width, r * m * width, width, 1),
            offset=m0 * width,
            name=name,
        )

    # ---- once per KV head (inside the loop) ---------------------------------------------------
    def load_kv(self, g) -> tuple:
        """(Kᵀ, [V | 1]) of KV head ``g`` (an affine loop expression) in SBUF."""
        b, d, dv, n, nc = self.b, self.d, self.dv, self.n, len(self.chunks)
        nf, hd = n // P, _ds(g, 1)
        kn = b.alloc((P, nc, d), self.dt, name="k_nat")
        if nf:
            b.dma_copy(
                dst=_acc(kn, (0, P), (0, nf), (0, d)), src=_acc(self.kview, hd, (0, P), (0, nf), (0, d))
            )
        if self.ktail is not None:
            t = n - nf * P
            b.dma_copy(dst=_acc(kn, (0, t), (nf, 1), (0, d)), src=_acc(self.ktail, hd, (0, t), (0, d)))
        kt = b.alloc((P, n), self.dt, name="k_t")
        slots = TRN2.psum_bank_bytes // (P * self.dt.itemsize)  # chunks per PSUM bank
        for s0 in range(0, nc, slots):
            sn = min(slots, nc - s0)
            ps = b.alloc((P, slots * P), self.dt, "psum", name="ps_k")
            for c in range(s0, s0 + sn):
                c0, kc = self.chunks[c]
                b.nc_transpose(
                    dst=_acc(ps, (0, d), (c0 - s0 * P, kc)), data=_acc(kn, (0, kc), (c, 1), (0, d))
                )
            width = self.chunks[s0 + sn - 1][0] + self.chunks[s0 + sn - 1][1] - s0 * P
            b.tensor_copy(
                dst=_acc(kt, (0, d), (s0 * P, width)),
                src=_acc(ps, (0, d), (0, width)),
                engine=self.engine(width, self.fast),
            )
        vn = b.alloc((P, nc, dv + 1), self.dt, name="v_nat")  # [V | 1]
        b.memset(dst=_acc(vn, (0, P), (0, nc), (dv, 1)), value=1.0, engine="gpsimd")
        if nf:
            b.dma_copy(
                dst=_acc(vn, (0, P), (0, nf), (0, dv)), src=_acc(self.vview, hd, (0, P), (0, nf), (0, dv))
            )
        if self.vtail is not None:
            t = n - nf * P
            b.dma_copy(dst=_acc(vn, (0, t), (nf, 1), (0, dv)), src=_acc(self.vtail, hd, (0, t), (0, dv)))
        return kt, vn

    def key_blocks(self, m0: int, rows: int) -> tuple[list, list]:
        """(per unit the chunks' visibility, [(first chunk, last chunk)] of the key blocks the
        block's units see some key of)."""
        vis = [[self.visible(m0, ri, rows, c0, kc) for c0, kc in self.chunks] for ri in range(self.r)]
        used = [c for c in range(len(self.chunks)) if any(v[c].any() for v in vis)]
        lo, hi = used[0], used[-1]
        return vis, [(a, min(a + self.bc, hi + 1) - 1) for a in range(lo, hi + 1, self.bc)]

    # ---- one block: r units, the key blocks in an online softmax ------------------------------
    def scores(self, kt, m0: int, rows: int, q_t, vis, a: int, z: int):
        """``S = Q Kᵀ`` of the block's r units over key chunks a..z (masks accumulated on the
        chunks a unit only partly sees): [(PSUM tile, index in it)] per unit, ``per`` units to a
        bank."""
        b, d, r, rw = self.b, self.d, self.r, (0, rows)
        k0 = self.chunks[a][0]
        w = self.chunks[z][0] + self.chunks[z][1] - k0
        per = max(1, min(r, MAX_KEYS // w))
        scores = []
        for ri in range(r):
            if ri % per == 0:
                s = b.alloc((P, min(per, r - ri), w), F32, "psum", name="scores")
            scores.append((s, ri % per))
            b.nc_matmul(
                dst=_acc(s, rw, (ri % per, 1), (0, w)),
                stationary=_acc(q_t, (0, d), (ri, 1), rw),
                moving=_acc(kt, (0, d), (k0, w)),
            )
            self.add_masks(s, ri % per, m0, ri, rows, vis[ri], a, z, k0)
        return scores, per, w

    def running_max(self, negmax, negm, hb, rows: int):
        """(-m', α): the new negated stabiliser ``min(-scale·max S, -m)`` (the sink's ``-sink``
        for the first key block) and ``α = exp(m - m')`` as a (P, r, 1) tile (None first)."""
        b, r = self.b, self.r
        rw, col = (0, rows), (0, r)
        new = b.alloc((P, r), F32, name="neg_run_max")
        if negm is None:
            b.tensor_scalar(
                dst=_acc(new, rw, col),
                data=_acc(negmax, rw, col),
                op0="multiply",
                operand0=self.scale,
                op1="minimum",
                operand1=_acc(self.negsink, rw, hb),
            )
            return new, None
        b.tensor_scalar(
            dst=_acc(new, rw, col), data=_acc(negmax, rw, col), op0="multiply", operand0=self.scale
        )
        b.tensor_tensor(
            dst=_acc(new, rw, col), data1=_acc(new, rw, col), data2=_acc(negm, rw, col), op="minimum"
        )
        diff = b.alloc((P, r), F32, name="max_step")  # -m' - (-m)
        b.tensor_tensor(
            dst=_acc(diff, rw, col), data1=_acc(new, rw, col), data2=_acc(negm, rw, col), op="subtract"
        )
        alpha = b.alloc((P, r, 1), F32, name="rescale")
        b.activation(dst=_acc(alpha, rw, col, (0, 1)), op="exp", data=_acc(diff, rw, col))
        return new, alpha

    def accumulate(self, acc, alpha, pv, rows: int):
        """``A = [O | l]`` of the first key block, else ``A = A·α + [O | l]`` (the product on
        GpSimd, the sum on VectorE reading PSUM); returns A."""
        b, r, dv = self.b, self.r, self.dv
        rw, col = (0, rows), (0, r)
        full = _acc(pv, rw, col, (0, dv + 1))
        if acc is None:
            acc = b.alloc((P, r, dv + 1), F32, name="acc")
            b.tensor_copy(
                dst=_acc(acc, rw, col, (0, dv + 1)), src=full, engine=self.engine(r * (dv + 1), False)
            )
            return acc
        whole = _acc(acc, rw, col, (0, dv + 1))
        b.tensor_tensor(
            dst=whole, data1=whole, data2=_acc(alpha, rw, col, (0, dv + 1, 0)), op="multiply", engine="gpsimd"
        )
        b.tensor_tensor(dst=whole, data1=whole, data2=full, op="add")
        return acc

    def long_block(self, kv, g, slot: int, m0: int, rows: int, q_t, out):
        """Emit the block's r units (head block ``slot`` of KV head ``g``, query tile ``m0``),
        one stage per ``next()``: per key block the scores, the max, the running max, P, Pᵀ,
        ``[O | l]`` and the accumulator; then ``O / (l + exp(sink - m))``."""
        b, r = self.b, self.r
        rw = (0, rows)
        hb = _ds(Affine.of(g) * self.nb + slot, 1)  # the block's sinks column
        vis, kblocks = self.key_blocks(m0, rows)
        negm = acc = pv = None
        yield
        for a, z in kblocks:
            scores, per, w = self.scores(kv[0], m0, rows, q_t, vis, a, z)
            yield
            negmax = b.alloc((P, r), F32, name="neg_max")
            for ri in range(0, r, per):
                n_in = min(per, r - ri)
                b.tensor_reduce(
                    dst=_acc(negmax, rw, (ri, n_in)),
                    op="maximum",
                    data=_acc(scores[ri][0], rw, (0, n_in), (0, w)),
                    axis=2,
                    negate=True,
                )
            yield
            new, alpha = self.running_max(negmax, negm, hb, rows)
            yield
            pv = yield from self.probs_values(kv[1], scores, new, a, z, w, rows)
            if len(kblocks) > 1:
                yield
                acc = self.accumulate(acc, alpha, pv, rows)
            negm = new
        total = pv if acc is None else acc
        yield from self.normalise(total, negm, hb, out, (0, 1), slot, rows)

    def build(self):
        """Constants and mask tiles, then the loop over KV heads: K, V once, per query tile the
        Q load, the head blocks as a software pipeline, the O store; the loop body list-scheduled,
        then deallocations."""
        b, d, dv, r, nb = self.b, self.d, self.dv, self.r, self.nb
        self.identity()
        self.sink_columns()
        self.make_views()
        for m0 in range(0, self.m, P):  # every mask tile, before the loop
            rows = min(P, self.m - m0)
            vis, _ = self.key_blocks(m0, rows)
            for ri in range(r):
                for c, (c0, kc) in enumerate(self.chunks):
                    if vis[ri][c].any() and not vis[ri][c].all():
                        self.mask_tile(m0, rows, c0, kc)
        u = heads_per_iteration(self.g, visible_pairs(self.m, self.window, self.rep))
        with b.fori_loop(0, self.g // u) as gi:
            running = []
            for gu in range(u):
                g = Affine.of(gi) * u + gu
                kv = self.load_kv(g)
                hd = _ds(g, 1)
                for t, m0 in enumerate(range(0, self.m, P)):
                    rows = min(P, self.m - m0)
                    span = rows if r == 1 else self.pph
                    q_nat = b.alloc((P, 1, nb, r, d), self.dt, name="q_nat")
                    b.dma_copy(
                        dst=_acc(q_nat, (0, rows), (0, 1), (0, nb), (0, r), (0, d)),
                        src=_acc(self.qviews[t], hd, (0, r), (0, span), (0, nb), (0, r), (0, d)),
                    )
                    out = b.alloc((P, 1, nb, r, dv), self.dt, name="out")
                    store = (
                        _acc(self.oviews[t], hd, (0, r), (0, span), (0, nb), (0, r), (0, dv)),
                        _acc(out, (0, rows), (0, 1), (0, nb), (0, r), (0, dv)),
                    )
                    for slot in range(nb):
                        q_t = self.q_transposed(q_nat, 1, slot, rows)
                        gen = self.long_block(kv, g, slot, m0, rows, q_t, out)
                        running.append((gen, store if slot == nb - 1 else None))
                        running = advance(b, running)
                        while len(running) > MAX_IN_FLIGHT:
                            running = advance(b, running)
            while running:
                running = advance(b, running)
        loop = b.graph.body.last
        list_order(loop.regions[0].blocks[0], TRN2)
        b.set_outputs({"o": self.o})
        insert_deallocs(b.graph.body)
        return b.graph


class _Before:
    """A stand-in 'last seen op' whose successor is ``op`` (the walk then starts at ``op``)."""

    def __init__(self, op):
        self._next = op


def long_sink_attention_body(types, attrs):
    """The NKI kernel of one ``tensor.sink_attention`` with more than ``MAX_KEYS`` keys."""
    return _LongKernel(types, attrs).build()
