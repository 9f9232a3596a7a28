"""Sums over every axis but one middle axis: ``x.sum((0, 2))`` of a ``(B, S, D)`` float32 kernel
input (16 x 512 x 256: the sum over batches and columns per position).

The fusion-group layout puts ``S`` on the partitions one position each, so every load moves
``D`` contiguous elements per batch and partition (1 KiB for ``D = 256``: DMA efficiency 0.74,
1.70x the roofline). Here partition ``p`` holds the ``r = S / 128`` consecutive positions
``p·r ... p·r + r - 1``, whose ``r·D`` elements are contiguous in every batch (4 KiB: full rate).
The batches are loaded in *pieces* of ``PIECE_BYTES`` per partition (the last piece cut in
halving pieces, …, 2, 1, 1 batches, so that little is left after the last byte) through ``BUFS``
buffers allocated once (piece ``n`` in buffer ``n mod BUFS``). Per piece and position ``j`` one
row sum over the piece's batches and columns writes a partial column: VectorE ``tensor_reduce``
for even ``j``, ScalarE ``activation(copy)`` with its summing ``reduce_res`` for odd ``j`` (its
element-wise output is discarded), each engine into a partial tile of its own (the scheduler does
not tell windows of one tile apart, so one shared tile would order the two engines). When all
pieces fit SBUF each has a buffer of its own and every load is issued at once. Per engine one
``tensor_reduce`` adds the partials of its positions, and one DMA stores the ``(128, r)`` sums,
``r`` contiguous outputs per partition (two DMAs for an odd ``r``).

Matched on the tensor graph: a float32 ``sum`` of a kernel input over all its axes but one
``a`` with ``0 < a < rank - 1``, ``S`` a multiple of 128, at least ``MIN_BYTES`` per partition,
returned (or reshaped and returned).
Sums are fp32, in another order than NumPy's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.graph import ReturnOp
from ...ir.value import Value
from ...nki.types import Access
from ...nki.types import ds as _ds
from ...tensor import ops as T
from .homes import HbmHome

P = 128
PIECE_BYTES = 16384  # per partition per piece (2 MiB over 128 partitions)
BUFS = 3
MAX_POSITIONS = 64  # r: positions per partition (two instructions each per piece)
MIN_BYTES = 3072  # per partition: below, the fusion-group lowering is as fast (2 x 256 x 8 x 16: 5.84 us)


@dataclass(eq=False)
class KeptAxisSum:
    """A claimed sum keeping axis ``S`` of ``x`` seen as ``(B, S, D)``."""

    op: T.ReduceOp
    x: Value
    outer: int  # B
    kept: int  # S
    inner: int  # D
    budget: int  # SBUF bytes per partition it may use

    @property
    def ops(self) -> set:
        return {self.op}


def _returned(v: Value) -> bool:
    """``v`` is only returned, directly or through one reshape that is only returned."""
    if not v.users:
        return False
    for u in v.users:
        if isinstance(u, ReturnOp):
            continue
        if not isinstance(u, T.ReshapeOp) or len(v.users) != 1 or not u.result.users:
            return False
        if any(not isinstance(w, ReturnOp) for w in u.result.users):
            return False
    return True


def batch_pieces(b_: int, row_bytes: int) -> list[int]:
    """Batches per piece: ``PIECE_BYTES`` worth each, the last piece cut in halves (…, 2, 1, 1)."""
    k = max(1, min(b_, PIECE_BYTES // row_bytes))
    out, left = [], b_
    while left > 0:
        out.append(min(k, left))
        left -= out[-1]
    tail = out.pop()
    while tail > 1:
        half = tail // 2
        out.append(tail - half)
        tail = half
    return out + [tail] if tail else out


def find_kept_axis_sums(graph, budget: int, taken: set) -> list[KeptAxisSum]:
    """Every sum of ``graph``'s top block this module claims (module docstring)."""
    out = []
    for op in graph.body:
        if not isinstance(op, T.ReduceOp) or op in taken or op.attrs["kind"] != "sum":
            continue
        x = op.operand(0)
        shape = x.type.shape
        if x.defining_op is not None or x.type.dtype.name != "f32" or len(shape) < 3:
            continue
        axes = sorted(int(a) % len(shape) for a in op.attrs["axes"])
        kept = [a for a in range(len(shape)) if a not in axes]
        if len(kept) != 1 or not 0 < kept[0] < len(shape) - 1 or not _returned(op.result):
            continue
        a = kept[0]
        b_, d = 1, 1
        for s in shape[:a]:
            b_ *= s
        for s in shape[a + 1 :]:
            d *= s
        s_ = shape[a]
        r = s_ // P
        if s_ % P or r > MAX_POSITIONS or b_ < 2 or b_ * r * d * 4 < MIN_BYTES:
            continue
        k = max(batch_pieces(b_, r * d * 4))
        if BUFS * k * r * d * 4 + k * d * 4 > budget:  # the buffers and ScalarE's discarded output
            continue
        out.append(KeptAxisSum(op, x, b_, s_, d, budget))
    return out


def emit_kept_axis_sum(ctx, ks: KeptAxisSum) -> bool:
    """Emit ``ks``; False (nothing emitted) when the input or output is not contiguous."""
    b_, s_, d = ks.outer, ks.kept, ks.inner
    r = s_ // P
    h = ctx.home(ks.x).reshape((b_, s_, d)) if ks.x in ctx.homes else None
    if h is None or h.strides[2] != 1 or h.strides[1] != d:
        return False
    hy = ctx.home_for_store(ks.op.result).reshape((P, r))
    if hy is None or hy.strides[1] != 1:
        return False
    rows = HbmHome(h.base, h.offset, (P, b_, r, d), (r * d, h.strides[0], d, 1))
    b = ctx.b
    ctx.at(f"kept-axis sums over {b_}x{s_}x{d}")
    xv = ctx.view(rows)
    plan = batch_pieces(b_, r * d * 4)
    k = max(plan)
    if (b_ + k) * r * d * 4 <= ks.budget:  # every piece in a buffer of its own
        bufs = [b.alloc((P, cnt, r, d), "f32", "sbuf", name="kx") for cnt in plan]
    else:
        bufs = [b.alloc((P, k, r, d), "f32", "sbuf", name="kx") for _ in range(BUFS)]
    nv = (r + 1) // 2  # positions on VectorE (even j); the odd ones on ScalarE
    part_v = b.alloc((P, nv, len(plan)), "f32", "sbuf", name="kpart")
    part_s = b.alloc((P, r - nv, len(plan)), "f32", "sbuf", name="kpart_act") if r > 1 else None
    junk = b.alloc((P, k, 1, d), "f32", "sbuf", name="copyout") if r > 1 else None
    b0 = 0
    for n, cnt in enumerate(plan):
        t = bufs[n % len(bufs)]
        b.dma_copy(
            dst=Access(t, (_ds(0, P), _ds(0, cnt), _ds(0, r), _ds(0, d))),
            src=Access(xv, (_ds(0, P), _ds(b0, cnt), _ds(0, r), _ds(0, d))),
        )
        for j in range(r):
            data = Access(t, (_ds(0, P), _ds(0, cnt), _ds(j, 1), _ds(0, d)))
            if j % 2:
                out = Access(junk, (_ds(0, P), _ds(0, cnt), _ds(0, 1), _ds(0, d)))
                dst = Access(part_s, (_ds(0, P), _ds(j // 2, 1), _ds(n, 1)))
                b.activation(dst=out, op="copy", data=data, reduce_res=dst)
            else:
                dst = Access(part_v, (_ds(0, P), _ds(j // 2, 1), _ds(n, 1)))
                b.tensor_reduce(dst=dst, op="add", data=data, axis=(1, 2, 3), keepdims=True)
        b0 += cnt
    res = b.alloc((P, nv, 2), "f32", "sbuf", name=ks.op.result.name_hint or "sum")  # position 2i + e
    for e, (pt, cnt) in enumerate(((part_v, nv), (part_s, r - nv))):
        if cnt:
            b.tensor_reduce(
                dst=Access(res, (_ds(0, P), _ds(0, cnt), _ds(e, 1))),
                op="add",
                data=Access(pt, (_ds(0, P), _ds(0, cnt), _ds(0, len(plan)))),
                axis=(2,),
                keepdims=True,
            )
    ctx.at(f"store {ctx.name(ks.op.result)}")
    flat = ctx.view(HbmHome(hy.base, hy.offset, (P, nv, 2), (r, 2, 1))) if r % 2 == 0 else None
    if flat is not None:
        b.dma_copy(dst=Access(flat, (_ds(0, P), _ds(0, nv), _ds(0, 2))), src=res)
    else:  # odd r: positions 2i and 2i + 1 < r
        yv = ctx.view(hy)
        for e, cnt in ((0, nv), (1, r - nv)):
            if cnt:
                dst = Access(yv, (_ds(0, P), _ds(e, cnt, 2)))
                b.dma_copy(dst=dst, src=Access(res, (_ds(0, P), _ds(0, cnt), _ds(e, 1))))
    return True
