"""``tensor.flash_attention`` lowered with an online softmax over key blocks.

When the keys are too many for a score row to stay on chip, attention as separate groups
would write the scores to HBM or reload K and V per query block. Here, per batch instance, the
keys are visited in blocks of ``KEY_BLOCK`` and each query tile of up to 128 rows keeps a
running max ``m``, sum ``l`` and output ``O``: per block ``S = Q Kᵀ`` (one PSUM bank),
``m' = max(m, scale·max(S))``, ``P = exp(scale·S - m')`` with its row sum fused into the
activation, ``α = exp(m - m')``, ``l = l·α + Σ P``, ``O = O·α + P V`` (Pᵀ by TensorE
transposes). The first block is peeled (no rescale); at the end ``O · (1/l)`` is cast and
stored. The scores never leave the chip.

K and V are read once per batch instance when Kᵀ and V fit ``RESIDENT_BYTES`` of a partition:
they are loaded (K transposed on the Tensor engine) before the query tiles, which read them on
chip. Otherwise the query tiles go in groups of ``QUERY_GROUP``: each key block is loaded once
per group and updates every tile of it, so K and V are read ⌈M / (128·QUERY_GROUP)⌉ times.

canonical/attention.py also forms the op for at most 512 keys with several query tiles
(``attention_pipelined.short_supported``): no running max is needed then, and the software
pipeline of lower/attention_pipelined.py is built instead.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import get_dtype
from ...ir.errors import BuildError
from ...nki.builder import Builder
from ...nki.types import Access, Affine, DimSlice
from ...nki.types import ds as _ds
from ...tensor.composites_attention import FlashAttentionOp
from .attention_pipelined import build_over_batch, pipelined_attention_body, short_supported
from .custom import register_composite_lowering

P = 128  # partitions
KEY_BLOCK = 512  # keys per block: one PSUM bank of fp32 scores
MAX_HEAD_DIM = 128  # q / k feature dim on the partitions for Q Kᵀ
MAX_VALUE_DIM = 512  # v feature dim: one PSUM bank of fp32 outputs
RESIDENT_BYTES = 96 * 1024  # per partition, for Kᵀ and V of one batch instance
QUERY_GROUP = 8  # query tiles sharing one load of a key block when K and V stream
F32 = get_dtype("f32")


def _acc(t, *dims) -> Access:
    return Access(t, tuple(dims))


def supported(q_type, k_type, v_type) -> bool:
    """Shapes and dtypes the kernel handles: f32 q, k, v with equal batch dims, head dim <= 128
    and value dim <= 512."""
    qs, ks, vs = q_type.shape, k_type.shape, v_type.shape
    if len(qs) < 2 or len(ks) != len(qs) or len(vs) != len(qs):
        return False
    if qs[:-2] != ks[:-2] or qs[:-2] != vs[:-2] or ks[-1] != qs[-1] or vs[-2] != ks[-2]:
        return False
    if any(t.dtype.name != "f32" for t in (q_type, k_type, v_type)):
        return False
    return qs[-1] <= MAX_HEAD_DIM and vs[-1] <= MAX_VALUE_DIM and min(qs + ks + vs) > 0


class _Kernel:
    """Builds the kernel (module docstring) for one operand signature."""

    def __init__(self, types, scale: float):
        qt, kt, vt = types
        self.qt, self.kt, self.vt, self.scale = qt, kt, vt, scale
        self.batch = qt.shape[:-2]
        self.m, self.d = qt.shape[-2:]
        self.n, self.dv = kt.shape[-2], vt.shape[-1]
        self.b = b = Builder("flash_attention")
        self.q = b.add_input("q", qt.shape, qt.dtype)
        self.k = b.add_input("k", kt.shape, kt.dtype)
        self.v = b.add_input("v", vt.shape, vt.dtype)
        self.o = b.alloc(self.batch + (self.m, self.dv), qt.dtype, "hbm", name="o")
        nkc = -(-self.n // P)
        self.resident = (self.n * kt.dtype.itemsize + nkc * self.dv * vt.dtype.itemsize) <= RESIDENT_BYTES

    # ---- helpers --------------------------------------------------------------------------------
    def win(self, t, idx, r0, rn: int, c0, cn: int) -> Access:
        return Access(t, tuple(_ds(i, 1) for i in idx) + (_ds(r0, rn), _ds(c0, cn)))

    def chunks(self, total: int, size: int, body, *, peel_first: bool = False) -> None:
        """body(offset, extent, first) over chunks of ``size``: full chunks in a fori_loop (the
        first one peeled when ``peel_first``), then a static remainder."""
        full, rem = total // size, total % size
        start = 0
        if peel_first and full:
            body(0, size, True)
            start = 1
        if full - start == 1:
            body(start * size, size, False)
        elif full - start > 1:
            with self.b.fori_loop(start, full) as c:
                body(Affine.of(c) * size, size, False)
        if rem:
            body(full * size, rem, peel_first and full == 0)

    def transposed(self, dst: Access, src: Access, rows: int, cols: int, dtype) -> None:
        """dst [cols, rows] = src [rows, cols]ᵀ through PSUM."""
        ps = self.b.alloc((P, P), dtype, "psum", name="ps_t")
        self.b.nc_transpose(dst=_acc(ps, _ds(0, cols), _ds(0, rows)), data=src)
        self.b.tensor_copy(dst=dst, src=_acc(ps, _ds(0, cols), _ds(0, rows)))

    # ---- K / V -------------------------------------------------------------------------------
    def load_keys(self, idx, n0, nb: int, k_t, v_b, col0) -> None:
        """Kᵀ of keys [n0, n0 + nb) into ``k_t[0:d, col0 + ...]`` and V into ``v_b`` chunks
        (keys on the partitions, chunk index ``col0 // P + c``)."""
        b, d = self.b, self.d
        for c in range(-(-nb // P)):
            kc = min(P, nb - c * P)
            kn = b.alloc((P, d), self.kt.dtype, name="k_nat")
            b.dma_copy(
                dst=_acc(kn, _ds(0, kc), _ds(0, d)),
                src=self.win(self.k, idx, Affine.of(n0) + c * P, kc, 0, d),
            )
            dst = _acc(k_t, _ds(0, d), _ds(Affine.of(col0) + c * P, kc))
            self.transposed(dst, _acc(kn, _ds(0, kc), _ds(0, d)), kc, d, self.kt.dtype)
            chunk = DimSlice(_chunk(col0) + c, 1, 1)
            b.dma_copy(
                dst=_acc(v_b, _ds(0, kc), chunk, _ds(0, self.dv)),
                src=self.win(self.v, idx, Affine.of(n0) + c * P, kc, 0, self.dv),
            )

    # ---- one query tile ------------------------------------------------------------------------
    def start_tile(self, idx, m0, mt: int) -> dict:
        """Qᵀ of the tile and its running state."""
        b, d = self.b, self.d
        qn = b.alloc((P, d), self.qt.dtype, name="q_nat")
        b.dma_copy(dst=_acc(qn, _ds(0, mt), _ds(0, d)), src=self.win(self.q, idx, m0, mt, 0, d))
        q_t = b.alloc((P, P), self.qt.dtype, name="q_t")
        self.transposed(
            _acc(q_t, _ds(0, d), _ds(0, mt)), _acc(qn, _ds(0, mt), _ds(0, d)), mt, d, self.qt.dtype
        )
        return {
            "m0": m0,
            "mt": mt,
            "q_t": q_t,
            "max": b.alloc((P, 1), F32, name="run_max"),
            "sum": b.alloc((P, 1), F32, name="run_sum"),
            "acc": b.alloc((P, self.dv), F32, name="acc"),
        }

    def update(self, st: dict, k_t, v_b, col0, nb: int, first: bool) -> None:
        """Fold keys [col0, col0 + nb) of the on-chip Kᵀ / V into the tile's state."""
        b, d, dv, mt = self.b, self.d, self.dv, st["mt"]
        rows, col = _ds(0, mt), _ds(0, 1)

        def c1(t):
            return _acc(t, rows, col)

        s = b.alloc((P, KEY_BLOCK), F32, "psum", name="scores")
        s_acc = _acc(s, rows, _ds(0, nb))
        b.nc_matmul(
            dst=s_acc, stationary=_acc(st["q_t"], _ds(0, d), rows), moving=_acc(k_t, _ds(0, d), _ds(col0, nb))
        )
        blk_max = b.alloc((P, 1), F32, name="blk_max")
        b.tensor_reduce(dst=c1(blk_max), op="maximum", data=s_acc, axis=1, keepdims=True)
        new_max = b.alloc((P, 1), F32, name="new_max")
        more = {} if first else {"op1": "maximum", "operand1": c1(st["max"])}
        b.tensor_scalar(dst=c1(new_max), data=c1(blk_max), op0="multiply", operand0=self.scale, **more)
        neg = b.alloc((P, 1), F32, name="neg_max")
        b.tensor_scalar(dst=c1(neg), data=c1(new_max), op0="multiply", operand0=-1.0)
        p = b.alloc((P, KEY_BLOCK), F32, name="probs")
        blk_sum = b.alloc((P, 1), F32, name="blk_sum")
        b.activation(
            dst=_acc(p, rows, _ds(0, nb)),
            op="exp",
            data=s_acc,
            bias=c1(neg),
            scale=self.scale,
            reduce_res=c1(blk_sum),
        )
        acc = _acc(st["acc"], rows, _ds(0, dv))
        if first:
            b.tensor_copy(dst=c1(st["sum"]), src=c1(blk_sum))
        else:
            alpha = b.alloc((P, 1), F32, name="alpha")
            b.activation(dst=c1(alpha), op="exp", data=c1(st["max"]), bias=c1(neg))
            b.tensor_scalar(
                dst=c1(st["sum"]),
                data=c1(st["sum"]),
                op0="multiply",
                operand0=c1(alpha),
                op1="add",
                operand1=c1(blk_sum),
            )
            b.tensor_scalar(dst=acc, data=acc, op0="multiply", operand0=c1(alpha))
        b.tensor_copy(dst=c1(st["max"]), src=c1(new_max))
        nc = -(-nb // P)
        p_t = b.alloc((P, KEY_BLOCK // P, P), F32, name="probs_t")
        for c in range(nc):
            kc = min(P, nb - c * P)
            dst = _acc(p_t, _ds(0, kc), _ds(c, 1), rows)
            self.transposed(dst, _acc(p, rows, _ds(c * P, kc)), mt, kc, F32)
        pv = b.alloc((P, dv), F32, "psum", name="pv")
        for c in range(nc):
            kc = min(P, nb - c * P)
            b.nc_matmul(
                dst=_acc(pv, rows, _ds(0, dv)),
                stationary=_acc(p_t, _ds(0, kc), _ds(c, 1), rows),
                moving=_acc(v_b, _ds(0, kc), DimSlice(_chunk(col0) + c, 1, 1), _ds(0, dv)),
                accumulate=c > 0,
            )
        if first:
            b.tensor_copy(dst=acc, src=_acc(pv, rows, _ds(0, dv)))
        else:
            b.tensor_tensor(dst=acc, data1=acc, data2=_acc(pv, rows, _ds(0, dv)), op="add")

    def finish_tile(self, idx, st: dict) -> None:
        b, mt, dv = self.b, st["mt"], self.dv
        rows = _ds(0, mt)
        recip = b.alloc((P, 1), F32, name="recip")
        b.activation(dst=_acc(recip, rows, _ds(0, 1)), op="reciprocal", data=_acc(st["sum"], rows, _ds(0, 1)))
        out = b.alloc((P, dv), self.qt.dtype, name="out")
        b.tensor_scalar(
            dst=_acc(out, rows, _ds(0, dv)),
            data=_acc(st["acc"], rows, _ds(0, dv)),
            op0="multiply",
            operand0=_acc(recip, rows, _ds(0, 1)),
        )
        b.dma_copy(dst=self.win(self.o, idx, st["m0"], mt, 0, dv), src=_acc(out, rows, _ds(0, dv)))

    # ---- loop structure --------------------------------------------------------------------------
    def instance(self, idx) -> None:
        if self.resident:
            nkc = -(-self.n // P)
            k_t = self.b.alloc((P, nkc * P), self.kt.dtype, name="k_resident")
            v_b = self.b.alloc((P, nkc, self.dv), self.vt.dtype, name="v_resident")
            self.chunks(self.n, KEY_BLOCK, lambda n0, nb, _f: self.load_keys(idx, n0, nb, k_t, v_b, n0))

            def tile(m0, mt, _first):
                st = self.start_tile(idx, m0, mt)
                self.chunks(
                    self.n, KEY_BLOCK, lambda n0, nb, f: self.update(st, k_t, v_b, n0, nb, f), peel_first=True
                )
                self.finish_tile(idx, st)

            self.chunks(self.m, P, tile)
            return

        def group(m0, rows: int, _first):
            tiles = [(Affine.of(m0) + t * P, min(P, rows - t * P)) for t in range(-(-rows // P))]
            states = [self.start_tile(idx, r0, rt) for r0, rt in tiles]

            def block(n0, nb, first):
                k_t = self.b.alloc((P, KEY_BLOCK), self.kt.dtype, name="k_t")
                v_b = self.b.alloc((P, KEY_BLOCK // P, self.dv), self.vt.dtype, name="v_blk")
                self.load_keys(idx, n0, nb, k_t, v_b, 0)
                for st in states:
                    self.update(st, k_t, v_b, 0, nb, first)

            self.chunks(self.n, KEY_BLOCK, block, peel_first=True)
            for st in states:
                self.finish_tile(idx, st)

        self.chunks(self.m, P * QUERY_GROUP, group)

    def build(self):
        return build_over_batch(self.b, self.batch, self.instance, self.o)


def _chunk(col0) -> Affine:
    """The 128-key chunk index of key offset ``col0`` (a multiple of 128)."""
    a = Affine.of(col0)
    return Affine(a.const // P, tuple((v, c // P) for v, c in a.terms))


def flash_attention_body(types, attrs):
    """The NKI kernel of one ``tensor.flash_attention`` with operand types ``types``."""
    if not supported(*types):
        shapes = ", ".join(f"{n} {t}" for n, t in zip("qkv", types))
        raise BuildError(
            f"tensor.flash_attention ({shapes}): the kernel takes f32 q (..., M, D), k (..., N, D) "
            f"and v (..., N, Dv) with equal batch dims, D <= {MAX_HEAD_DIM} and Dv <= {MAX_VALUE_DIM}"
        )
    if short_supported(*types, supported):
        return pipelined_attention_body(types, float(np.float32(attrs["scale"])))
    return _Kernel(types, float(np.float32(attrs["scale"]))).build()


register_composite_lowering(FlashAttentionOp, flash_attention_body)
