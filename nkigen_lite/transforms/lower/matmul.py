"""Matmul lowering: C(..., M, N) = A(..., M, K) @ B(..., K, N) on the Tensor engine.

Per M tile (<= 128 rows) the stationary operand Aᵀ is staged once for every K chunk (K on the
partitions) and reused across all N chunks. N is processed in blocks of up to
``MATMUL_BANKS`` PSUM banks (512 fp32 columns each); for every K chunk one B tile covering the
block is loaded and one nc_matmul per bank accumulates into PSUM (the first K chunk is peeled
because ``accumulate`` is a static flag). The block is then copied PSUM -> SBUF (casting to C's
dtype) and stored with one DMA. Operands the Tensor engine cannot read (ints, bool, e4m3fn) are
staged as fp32 / bf16 tiles by the loading DMA (exact for integers while partial sums stay
below 2**24). Batch dims are outer loops; broadcast batch dims read stride-0
views. An operand is brought K-major either by a DMA window in that order, or, when its K dim is
the contiguous one, by a natural load plus a TensorE transpose through PSUM.
"""

from __future__ import annotations

from ...ir.dtypes import get_dtype
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T
from ...tensor.rules import broadcast_shapes
from .context import LowerContext
from .homes import HbmHome

MATMUL_BANKS = 4  # PSUM banks used for one N block (the rest stay free for transposes)


def _chunks(n: int, size: int):
    """(n_full, chunk, remainder) of splitting n into chunks of ``size``."""
    return n // size, size, n % size


def _ds(off, size: int) -> DimSlice:
    return DimSlice(Affine.of(off), size, 1)


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


def lower_matmul(ctx: LowerContext, op: T.MatmulOp) -> None:
    ctx.at_op(op)
    a_v, b_v = op.operands
    c_v = op.result
    ca, cb = _compute_dtypes(ctx.target, a_v.type.dtype, b_v.type.dtype)
    ha, hb = ctx.home(a_v), ctx.home(b_v)
    if a_v.type.rank == 1:
        ha = ha.reshape((1,) + ha.shape)
    if b_v.type.rank == 1:
        hb = hb.reshape(hb.shape + (1,))
    m, k = ha.shape[-2:]
    n = hb.shape[-1]
    batch = broadcast_shapes(op.name, ha.shape[:-2], hb.shape[:-2])
    ha = ha.broadcast_to(batch + (m, k))
    hb = hb.broadcast_to(batch + (k, n))
    home = ctx.home_for_store(c_v)
    hc = home.reshape(batch + (m, n))
    staging = None
    if hc is None:  # C's home is not contiguous (e.g. a concat slice): compute, then copy
        staging = ctx.alloc_hbm(c_v.type.shape, c_v.type.dtype)
        hc = staging.reshape(batch + (m, n))
    MatmulEmitter(ctx, ha, hb, hc, batch, m, k, n, ca, cb, c_v.type.dtype).run()
    if staging is not None:
        ctx.b.dma_copy(dst=Access.whole(ctx.view(home)), src=Access.whole(ctx.view(staging)))


class MatmulEmitter:
    """Emits the loop nest described in the module docstring."""

    def __init__(self, ctx, ha, hb, hc, batch, m, k, n, a_dt, b_dt, c_dt):
        self.ctx, self.b = ctx, ctx.b
        self.batch, self.m, self.k, self.n = batch, m, k, n
        self.a_dt, self.b_dt, self.c_dt = a_dt, b_dt, c_dt
        self.p = ctx.partitions
        self.fmax = ctx.target.psum_bank_fmax
        self.block = min(n, MATMUL_BANKS * self.fmax)
        # A natural is (batch, M, K), K-major (batch, K, M); B natural (batch, N, K), K-major (batch, K, N)
        homes = {"a_nat": ha, "a_km": _swap_last(ha), "b_nat": _swap_last(hb), "b_km": hb, "c": hc}
        self.views = {key: ctx.view(h) for key, h in homes.items()}
        # transpose on chip when the operand's K dim is the contiguous one (and it is not fp8)
        self.transpose = {
            "a": m > 1 and ha.strides[-1] == 1 and a_dt.itemsize >= 2,
            "b": n > 1 and hb.strides[-1] != 1 and hb.strides[-2] == 1 and b_dt.itemsize >= 2,
        }

    def _instances(self, n: int, size: int, body, *, peel_first: bool = False) -> None:
        """body(offset, extent, first) over chunks of ``size``: full chunks in a fori_loop (the
        first one peeled when ``peel_first``), then a static remainder."""
        full, rem = n // size, n % size
        start = 0
        if peel_first:
            if full == 0:
                body(0, rem, True)
                return
            body(0, size, True)
            start = 1
        if full - start == 1:
            body(start * size, size, False)
        elif full - start > 1:
            with self.b.fori_loop(start, full) as c:
                body(c * size, size, False)
        if rem:
            body(full * size, rem, False)

    def run(self) -> None:
        self._batch_level(0, [])

    def _batch_level(self, d: int, idx: list) -> None:
        if d == len(self.batch):
            self._instances(self.m, self.p, lambda m0, mt, _: self._m_tile(idx, m0, mt))
        elif self.batch[d] == 1:
            self._batch_level(d + 1, idx + [0])
        else:
            with self.b.fori_loop(0, self.batch[d]) as i:
                self._batch_level(d + 1, idx + [i])

    def _window(self, key: str, idx: list, r0, rn: int, c0, cn: int) -> Access:
        dims = [_ds(i, 1) for i in idx] + [_ds(r0, rn), _ds(c0, cn)]
        return Access(self.views[key], tuple(dims))

    def _kmajor(self, dst: Access, which: str, idx, k0, kt: int, x0, xw: int, dt) -> None:
        """Fill ``dst`` [kt, xw] with the operand's K chunk on the partitions."""
        if not self.transpose[which]:
            self.b.dma_copy(dst=dst, src=self._window(which + "_km", idx, k0, kt, x0, xw))
            return
        for j in range(0, xw, self.p):
            w = min(self.p, xw - j)
            nat = self.b.alloc((self.p, kt), dt, "sbuf", name=which + "_nat")
            self.b.dma_copy(dst=_tile_acc(nat, _ds(0, w), _ds(0, kt)),
                            src=self._window(which + "_nat", idx, Affine.of(x0) + j, w, k0, kt))
            ps = self.b.alloc((self.p, self.p), dt, "psum", name="ps_t")
            self.b.nc_transpose(dst=_tile_acc(ps, _ds(0, kt), _ds(0, w)),
                                data=_tile_acc(nat, _ds(0, w), _ds(0, kt)))
            last = dst.dims[-1]
            sub = Access(dst.tensor, dst.dims[:-1] + (DimSlice(last.offset + j, w, 1),))
            self.b.tensor_copy(dst=sub, src=_tile_acc(ps, _ds(0, kt), _ds(0, w)))

    def _m_tile(self, idx, m0, mt: int) -> None:
        nk = -(-self.k // self.p)
        at = self.b.alloc((self.p, nk, mt), self.a_dt, "sbuf", name="a_t")

        def stage(k0, kt, _first):
            dst = Access(at, (_ds(0, kt), DimSlice(_chunk_index(k0, self.p), 1, 1), _ds(0, mt)))
            self._kmajor(dst, "a", idx, k0, kt, m0, mt, self.a_dt)

        self._instances(self.k, self.p, stage)
        self._instances(self.n, self.block, lambda n0, w, _: self._n_block(idx, at, m0, mt, n0, w))

    def _n_block(self, idx, at, m0, mt: int, n0, w: int) -> None:
        chunks = [(j, min(self.fmax, w - j)) for j in range(0, w, self.fmax)]
        banks = [self.b.alloc((self.p, self.fmax), "f32", "psum", name="acc") for _ in chunks]

        def kstep(k0, kt, first):
            bt = self.b.alloc((self.p, w), self.b_dt, "sbuf", name="b_k")
            self._kmajor(_tile_acc(bt, _ds(0, kt), _ds(0, w)), "b", idx, k0, kt, n0, w, self.b_dt)
            stat = Access(at, (_ds(0, kt), DimSlice(_chunk_index(k0, self.p), 1, 1), _ds(0, mt)))
            for (j, nj), ps in zip(chunks, banks):
                self.b.nc_matmul(dst=_tile_acc(ps, _ds(0, mt), _ds(0, nj)), stationary=stat,
                                 moving=_tile_acc(bt, _ds(0, kt), _ds(j, nj)), accumulate=not first)

        self._instances(self.k, self.p, kstep, peel_first=True)
        ct = self.b.alloc((self.p, w), self.c_dt, "sbuf", name="c")
        for (j, nj), ps in zip(chunks, banks):
            self.b.tensor_copy(dst=_tile_acc(ct, _ds(0, mt), _ds(j, nj)),
                               src=_tile_acc(ps, _ds(0, mt), _ds(0, nj)))
        self.b.dma_copy(dst=self._window("c", idx, m0, mt, n0, w),
                        src=_tile_acc(ct, _ds(0, mt), _ds(0, w)))


def _chunk_index(k0, p: int) -> Affine:
    """Index of the chunk starting at ``k0`` (a constant multiple of p or ``c * p``)."""
    a = Affine.of(k0)
    return Affine(a.const // p, tuple((v, c // p) for v, c in a.terms))
