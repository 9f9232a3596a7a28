"""``tensor.decode_attention`` lowered as one straight-line kernel: every cache read once, in one
large DMA per KV head, and the scores kept on chip with the keys on the partitions.

Keys are laid out ``key = p·T + t`` (``T = N / 128``): partition ``p`` of a cache tile holds the
``T`` consecutive keys ``p·T …`` — ``T·D`` contiguous elements (8 KiB for N = 4096, D = 128 in
bf16), so one DMA per KV head moves K (or V) at full efficiency. Per KV head ``g``:

- ``Kᵀ`` by TensorE transposes of the ``T`` blocks ``K[:, t, :]`` (eight per PSUM bank, evacuated
  alternately by VectorE and ScalarE); block ``t`` holds keys ``p·T + t`` as its columns;
- the scores transposed, ``Sᵀ[:, g, :, t] = Kᵀ_tᵀ · qᵀ_g`` — the block as the stationary operand,
  the group's ``R`` query columns moving (64-cycle matmuls) — into one PSUM bank holding every
  head's scores ``[128 keys, G·R, T]``: keys on the partitions are exactly the layout ``P V``
  needs, so the probabilities are never transposed.

The softmax runs once for all heads on that ``[128, G·R·T]`` tile: the causal mask
``p·T + t <= pos`` (an ``iota`` compared with ``pos`` broadcast to every partition) selects the
scores or ``-inf`` while rounding them to the cache dtype (as the program's matmul result is
rounded); the row max is a per-partition max, a TensorE transpose, a max over the partitions
and a transpose back; ``exp`` on ScalarE with the scale folded in; the row sum a per-partition
sum and a ones-matmul that gives every partition the total; the probabilities rounded to the
cache dtype. ``Oᵀ[:, g, :] = Σ_t V_tᵀ · Pᵀ_t`` accumulates in PSUM per head, and ``O`` reaches
HBM rounded to the dtype through one transpose and one contiguous store.

The K loads come first, then the V loads, so the softmax runs while V streams in and only the
last head's ``P V`` and the output follow the last byte.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import get_dtype
from ...ir.errors import BuildError
from ...nki.builder import Builder
from ...nki.types import Access, Affine, DimSlice
from ...tensor.composites_decode_attention import DecodeAttentionOp
from .custom import register_composite_lowering
from .deallocs import insert_deallocs

P = 128  # partitions
DTYPES = ("bf16", "f16")
PSUM_BANK_F32 = 512  # fp32 elements per partition in one PSUM bank: all heads' scores
BLOCKS_PER_BANK = 8  # 128 x 128 16-bit transposes per PSUM bank
CACHE_BYTES_PER_PARTITION = 128 * 1024  # K and V tiles together (SBUF holds 208 KiB)
F32 = get_dtype("f32")


def _d(start, size: int, stride: int = 1) -> DimSlice:
    return DimSlice(Affine.of(start), size, stride if size > 1 else 1)


def _acc(t, *dims) -> Access:
    """Access of tile ``t``: an int ``n`` is ``0:n``, a tuple ``(start, size[, stride])``."""
    return Access(t, tuple(_d(0, d) if isinstance(d, int) else _d(*d) for d in dims))


def supported(q_shape, k_shape, v_shape, dtype) -> bool:
    """Shapes the kernel handles: q (G, R, D), k (G, N, D), v (G, N, Dv), D and Dv <= 128, N a
    multiple of 128, every head's fp32 scores in one PSUM bank (G·R·N/128 <= 512), K and V within
    ``CACHE_BYTES_PER_PARTITION`` of a partition, and a 16-bit float dtype."""
    qs, ks, vs = tuple(q_shape), tuple(k_shape), tuple(v_shape)
    if not (len(qs) == len(ks) == len(vs) == 3) or min(qs + ks + vs) <= 0:
        return False
    g, r, d = qs
    n, dv = vs[1:]
    if ks != (g, n, d) or vs[0] != g or d > P or dv > P or n % P:
        return False
    if g * r * (n // P) > PSUM_BANK_F32:
        return False
    name = getattr(dtype, "name", dtype)
    itemsize = 2 if name in DTYPES else 0
    return itemsize > 0 and g * (n // P) * (d + dv) * itemsize <= CACHE_BYTES_PER_PARTITION


class _Kernel:
    """Builds the kernel of the module docstring for one operand signature."""

    def __init__(self, types, attrs):
        qt, kt, vt, _pt = types
        self.dt = qt.dtype
        self.g, self.r, self.d = qt.shape
        self.n, self.dv = vt.shape[1:]
        self.t = self.n // P
        self.h = self.g * self.r
        self.scale = float(np.float32(attrs["scale"]))  # the program multiplies in fp32
        self.b = b = Builder("decode_attention")
        self.q = b.add_input("q", qt.shape, self.dt)
        self.k = b.add_input("k", kt.shape, self.dt)
        self.v = b.add_input("v", vt.shape, self.dt)
        self.pos = b.add_input("pos", (), "i32")
        self.o = b.alloc((self.g, self.r, self.dv), self.dt, "hbm", name="o")

    def cache_view(self, x, width: int, name: str):
        """``x`` (G, N, width) as [128, G, T, width]: partition p holds keys p·T … p·T + T - 1."""
        n, t = self.n, self.t
        return self.b.hbm_view(x, (P, self.g, t, width), (t * width, n * width, width, 1), name=name)

    def load(self):
        """DMAs: q and pos first, then K of every head, then V of every head."""
        b, dt, g, t = self.b, self.dt, self.g, self.t
        q_rows = b.hbm_view(self.q, (self.h, self.d), (self.d, 1), name="q_rows")
        self.q_nat = b.alloc((self.h, self.d), dt, name="q_nat")
        b.dma_copy(dst=_acc(self.q_nat, self.h, self.d), src=_acc(q_rows, self.h, self.d))
        pos_b = b.hbm_view(self.pos, (P, 1), (0, 0), name="pos_all")
        self.pos_i = b.alloc((P, 1), "i32", name="pos_i")
        b.dma_copy(dst=_acc(self.pos_i, P, 1), src=_acc(pos_b, P, 1))
        kv = self.cache_view(self.k, self.d, "k_rows")
        vv = self.cache_view(self.v, self.dv, "v_rows")
        self.k_nat, self.v_nat = [], []
        for h in range(g):
            kn = b.alloc((P, t, self.d), dt, name="k_nat")
            b.dma_copy(dst=_acc(kn, P, t, self.d), src=_acc(kv, P, (h, 1), t, self.d))
            self.k_nat.append(kn)
        for h in range(g):
            vn = b.alloc((P, t, self.dv), dt, name="v_nat")
            b.dma_copy(dst=_acc(vn, P, t, self.dv), src=_acc(vv, P, (h, 1), t, self.dv))
            self.v_nat.append(vn)

    def constants(self):
        """The visibility predicate ``p·T + t <= pos`` and the ones of the sum's matmul."""
        b, t = self.b, self.t
        pos_f = b.alloc((P, 1), F32, name="pos_f")
        b.tensor_copy(dst=_acc(pos_f, P, 1), src=_acc(self.pos_i, P, 1))
        idx = b.alloc((P, t), "i32", name="key_index")
        b.iota(dst=_acc(idx, P, t), pattern=[[1, t]], channel_multiplier=t)
        self.visible = b.alloc((P, 1, t), "u8", name="visible")
        b.tensor_scalar(
            dst=_acc(self.visible, P, 1, t),
            data=_acc(idx, P, t),
            op0="less_equal",
            operand0=_acc(pos_f, P, 1),
        )
        self.ones = b.alloc((P, P), F32, name="ones")
        b.memset(dst=_acc(self.ones, P, P), value=1.0, engine="gpsimd")

    def q_columns(self):
        """qᵀ [D, G·R]: one TensorE transpose of the loaded rows."""
        b, dt, h, d = self.b, self.dt, self.h, self.d
        ps = b.alloc((d, h), dt, "psum", name="q_t_ps")
        b.nc_transpose(dst=_acc(ps, d, h), data=_acc(self.q_nat, h, d))
        self.q_t = b.alloc((d, h), dt, name="q_t")
        b.tensor_copy(dst=_acc(self.q_t, d, h), src=_acc(ps, d, h))

    def transpose_keys(self, g: int, flip: list):
        """Kᵀ of head ``g`` [D, T, 128]: block t's column p is key p·T + t."""
        b, dt, d, t = self.b, self.dt, self.d, self.t
        kt = b.alloc((d, t, P), dt, name="k_t")
        for t0 in range(0, t, BLOCKS_PER_BANK):
            nb = min(BLOCKS_PER_BANK, t - t0)
            ps = b.alloc((d, BLOCKS_PER_BANK, P), dt, "psum", name="k_t_ps")
            for j in range(nb):
                b.nc_transpose(dst=_acc(ps, d, (j, 1), P), data=_acc(self.k_nat[g], P, (t0 + j, 1), d))
            flip[0] = "scalar" if flip[0] == "vector" else "vector"
            b.tensor_copy(dst=_acc(kt, d, (t0, nb), P), src=_acc(ps, d, nb, P), engine=flip[0])
        return kt

    def scores(self, g: int, kt):
        """Sᵀ of head ``g``'s R queries into its columns of the shared scores bank."""
        b, d, r = self.b, self.d, self.r
        for t in range(self.t):
            b.nc_matmul(
                dst=_acc(self.sc, P, (g * r, r), (t, 1)),
                stationary=_acc(kt, d, (t, 1), P),
                moving=_acc(self.q_t, d, (g * r, r)),
            )

    def softmax(self):
        """Masked softmax over the keys of every head at once: probabilities [128, G·R, T]."""
        b, dt, h, t = self.b, self.dt, self.h, self.t
        y = b.alloc((P, h, t), dt, name="scores")
        b.select(
            dst=_acc(y, P, h, t),
            predicate=_acc(self.visible, P, (0, h, 0), t),
            on_true=_acc(self.sc, P, h, t),
            on_false=float("-inf"),
        )
        mx = b.alloc((P, h), F32, name="part_max")
        b.tensor_reduce(dst=_acc(mx, P, h), op="maximum", data=_acc(y, P, h, t), axis=2)
        mx_t = b.alloc((h, P), F32, "psum", name="part_max_t")
        b.nc_transpose(dst=_acc(mx_t, h, P), data=_acc(mx, P, h))
        neg = b.alloc((h, 1), F32, name="neg_max")
        b.tensor_reduce(
            dst=_acc(neg, h, 1), op="maximum", data=_acc(mx_t, h, P), axis=1, negate=True, keepdims=True
        )
        neg_rows = b.alloc((h, P), F32, name="neg_max_rows")
        b.tensor_copy(dst=_acc(neg_rows, h, P), src=_acc(neg, h, (0, P, 0)))
        neg_all = b.alloc((P, h, 1), F32, "psum", name="neg_max_all")
        b.nc_transpose(dst=_acc(neg_all, P, h, 1), data=_acc(neg_rows, h, P))
        shifted = b.alloc((P, h, t), F32, name="shifted")
        b.tensor_tensor(
            dst=_acc(shifted, P, h, t), data1=_acc(y, P, h, t), data2=_acc(neg_all, P, h, (0, t, 0)), op="add"
        )
        e = b.alloc((P, h, t), F32, name="exp")
        b.activation(dst=_acc(e, P, h, t), op="exp", data=_acc(shifted, P, h, t), scale=self.scale)
        part = b.alloc((P, h), F32, name="part_sum")
        b.tensor_reduce(dst=_acc(part, P, h), op="add", data=_acc(e, P, h, t), axis=2)
        total = b.alloc((P, h), F32, "psum", name="sum_all")
        b.nc_matmul(dst=_acc(total, P, h), stationary=_acc(self.ones, P, P), moving=_acc(part, P, h))
        rec = b.alloc((P, h, 1), F32, name="recip")
        b.activation(dst=_acc(rec, P, h, 1), op="reciprocal", data=_acc(total, P, h))
        self.p = b.alloc((P, h, t), dt, name="probs")
        b.tensor_tensor(
            dst=_acc(self.p, P, h, t), data1=_acc(e, P, h, t), data2=_acc(rec, P, h, (0, t, 0)), op="multiply"
        )

    def values(self, g: int):
        """Oᵀ of head ``g``: Σ_t V_tᵀ · Pᵀ_t accumulated in its columns of the output bank."""
        b, r, dv = self.b, self.r, self.dv
        for t in range(self.t):
            b.nc_matmul(
                dst=_acc(self.ot, dv, (g * r, r)),
                stationary=_acc(self.v_nat[g], P, (t, 1), dv),
                moving=_acc(self.p, P, (g * r, r), (t, 1)),
                accumulate=t > 0,
            )

    def store(self):
        """O rounded to the dtype, transposed to rows and stored with one DMA."""
        b, dt, h, dv = self.b, self.dt, self.h, self.dv
        ob = b.alloc((dv, h), dt, name="o_t")
        b.tensor_copy(dst=_acc(ob, dv, h), src=_acc(self.ot, dv, h))
        ps = b.alloc((h, dv), dt, "psum", name="o_ps")
        b.nc_transpose(dst=_acc(ps, h, dv), data=_acc(ob, dv, h))
        rows = b.alloc((h, dv), dt, name="o_rows")
        b.tensor_copy(dst=_acc(rows, h, dv), src=_acc(ps, h, dv), engine="scalar")
        o_rows = b.hbm_view(self.o, (h, dv), (dv, 1), name="o_rows")
        b.dma_copy(dst=_acc(o_rows, h, dv), src=_acc(rows, h, dv))

    def build(self):
        b = self.b
        self.load()
        self.constants()
        self.q_columns()
        self.sc = b.alloc((P, self.h, self.t), F32, "psum", name="scores_t")
        flip = ["scalar"]
        pending = None  # Kᵀ of the previous head: its scores follow the next head's transposes
        for g in range(self.g):
            kt = self.transpose_keys(g, flip)
            if pending is not None:
                self.scores(*pending)
            pending = (g, kt)
        self.scores(*pending)
        self.softmax()
        self.ot = b.alloc((self.dv, self.h), F32, "psum", name="out_t")
        for g in range(self.g):
            self.values(g)
        self.store()
        b.set_outputs({"o": self.o})
        insert_deallocs(b.graph.body)
        return b.graph


def decode_attention_body(types, attrs):
    """The NKI kernel of one ``tensor.decode_attention`` with operand types ``types``."""
    qt, kt, vt, pt = types
    ok = qt.dtype is kt.dtype is vt.dtype and pt.rank == 0 and pt.dtype.name == "i32"
    if not ok or not supported(qt.shape, kt.shape, vt.shape, qt.dtype):
        shapes = ", ".join(f"{n} {t}" for n, t in zip(("q", "k", "v", "pos"), types))
        raise BuildError(
            f"tensor.decode_attention ({shapes}): the kernel takes q (G, R, D), k (G, N, D), "
            f"v (G, N, Dv) of one dtype ({'/'.join(DTYPES)}) and a 0-d i32 pos, with D, Dv <= {P}, "
            f"N a multiple of {P}, G·R·N/{P} <= {PSUM_BANK_F32} and K, V within "
            f"{CACHE_BYTES_PER_PARTITION // 1024} KiB per partition"
        )
    return _Kernel(types, attrs).build()


register_composite_lowering(DecodeAttentionOp, decode_attention_body)
