"""Bias epilogues: ``C + b`` of a matmul ``C = A @ B`` added while C's PSUM banks are evacuated.

``x @ w + b`` with ``b`` one row broadcast over C's rows (shape ``(N,)``, ``(1, N)``, ...) was a
matmul whose PSUM banks VectorE copied into C's row tile, then a fusion group adding the
broadcast row to that tile (on GpSimd, both inputs in SBUF: 150 + 2N cycles per row tile, and
GpSimd shares VectorE's SBUF port). Here the copy is the add: one VectorE ``tensor_tensor`` per
bank reads the bank (PSUM) and the bias columns (SBUF) and writes ``C + b`` in C's dtype — N
cycles (one input stream per memory, docs/costmodel.md), as the fp32 -> C copy it replaces, and
no pass over C in SBUF. The bias is broadcast to all partitions once per kernel
(``ones[1, P]ᵀ · b`` on TensorE, one PSUM bank per 512 columns, copied to an SBUF tile on
ScalarE). Adding the bias into PSUM by a K = 1 ones-row matmul instead would cost a full
``nc_matmul`` per bank (its cycles are the moving columns, not K) on TensorE, the engine a
matmul is bound by.

Numerics: the sum is rounded once, to C's dtype, where NumPy rounds C first and then the sum:
for a 16-bit C the result lacks NumPy's rounding error of C (half a unit in C's last place);
for an fp32 C (PSUM holds fp32) the two agree.

Applies when C's only use is that add, the add keeps C's shape and dtype, ``b`` is a float
Tensor-engine dtype (bf16 / fp16 / fp32) varying along C's last axis only and its broadcast tile
takes at most 1/8 of a partition. B may be K-contiguous (``x @ w.T + b``, a PyTorch Linear):
16-bit B then comes K-major by DMA transposes (matmul_dma_transpose.py), fp32 B by TensorE
transposes whose PSUM copies share the evacuating engines, still faster fused.

Measured (scheduled, ``k.estimate()``): 2048×1024 @ 1024×4096 bf16 + b 228.6 µs (1.05x the
roofline; 416.4 µs with the add a pass of its own); 2048×1024 @ (4096×1024)ᵀ bf16 + b 262.1 ->
228.8 µs (1.20x -> 1.05x); the same in fp32 970.4 -> 967.0 µs; gpt-oss QKV (2048×2880 @
(5120×2880)ᵀ bf16 + b, K not a multiple of 128 so B is transposed on TensorE) 5440 -> 988 µs,
HBM traffic 8.10x -> 1.19x the minimum (unfused, the row pipeline reloaded B per row tile).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.op import Op
from ...ir.value import Value
from ...nki.types import Access
from ...nki.types import ds as _ds
from ...tensor import ops as T
from .groups import FusionGroup
from .homes import HbmHome


@dataclass
class BiasEpilogue:
    """The add ``C + bias`` (``add``) computed by the matmul's evacuation; ``tile`` is the bias
    broadcast to all partitions, [P, N] in SBUF, once ``load`` has run."""

    add: Op
    bias: Value
    tile: Value | None = None

    @property
    def result(self) -> Value:
        return self.add.result

    def load(self, ctx, n: int, p: int) -> None:
        """Load the bias row into one partition and broadcast it to ``p`` partitions (C's rows
        per tile; TensorE ones-matmuls, copied out of PSUM on ScalarE), at the current (top)
        level."""
        b, dt = ctx.b, self.bias.type.dtype
        ctx.at(f"bias {ctx.name(self.bias)} of {ctx.name(self.result)}")
        h = ctx.home(self.bias)
        s = h.strides[-1] if h.shape else 1
        row = b.alloc((1, n), dt, "sbuf", name="bias_row")
        b.dma_copy(dst=row, src=Access.whole(ctx.view(HbmHome(h.base, h.offset, (1, n), (n * s, s)))))
        ones = b.alloc((1, p), dt, "sbuf", name="ones")
        b.memset(dst=ones, value=1.0)
        self.tile = b.alloc((p, n), dt, "sbuf", name="bias")
        fmax = ctx.target.psum_bank_fmax
        for j in range(0, n, fmax):
            w = min(fmax, n - j)
            ps = b.alloc((p, fmax), "f32", "psum", name="bias_ps")
            b.nc_matmul(
                dst=Access(ps, (_ds(0, p), _ds(0, w))),
                stationary=ones,
                moving=Access(row, (_ds(0, 1), _ds(j, w))),
            )
            b.tensor_copy(
                dst=Access(self.tile, (_ds(0, p), _ds(j, w))),
                src=Access(ps, (_ds(0, p), _ds(0, w))),
                engine="scalar",
            )

    def evacuate(self, b, dst: Access, src: Access, col0, ncols: int, rows: int) -> None:
        """``dst = src + bias[:, col0 : col0 + ncols]`` (``src`` a PSUM bank of C's columns
        ``col0``.., ``rows`` partitions) on VectorE."""
        bias = Access(self.tile, (_ds(0, rows), _ds(col0, ncols)))
        b.tensor_tensor(dst=dst, data1=src, data2=bias, op="add", engine="vector")


def match_bias(ctx, op: T.MatmulOp, outputs: set) -> BiasEpilogue | None:
    """The bias epilogue of ``op`` when its result's only use is ``C + b`` as the module
    docstring requires, else None."""
    partitions, sbuf_bytes = ctx.partitions, ctx.target.sbuf_bytes_per_partition
    c = op.result
    uses = list(c.uses)
    if c in outputs or len(uses) != 1 or not isinstance(uses[0].op, T.AddOp):
        return None
    add = uses[0].op
    x, y = add.operands
    if x is y:
        return None
    bias = y if x is c else x
    n = c.type.shape[-1]
    bt = bias.type
    if add.result.type != c.type or not c.type.dtype.is_float or c.type.rank < 2 or n < 2:
        return None
    if bt.rank < 1 or bt.shape[-1] != n or any(e != 1 for e in bt.shape[:-1]):
        return None
    if bt.dtype.name not in ("bf16", "f16", "f32") or n * bt.dtype.itemsize * 8 > sbuf_bytes:
        return None
    if partitions < 2:
        return None
    return BiasEpilogue(add, bias)


def without(g: FusionGroup, ops: set) -> FusionGroup | None:
    """``g`` without ``ops`` (computed elsewhere), or None when nothing is left."""
    kept = [op for op in g.ops if op not in ops]
    if len(kept) == len(g.ops):
        return g
    return FusionGroup(g.id, g.domain, kept) if kept else None
