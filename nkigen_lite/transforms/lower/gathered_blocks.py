"""``tensor.gathered_matmul`` with M > 1 rows per selection in blocks of selections: the results
of up to ``128 / M`` selections share PSUM banks and leave in one store.

With one store (and, for per-selection rows of ``a``, one staging load) per selection, a rank of
an expert-parallel MoE block (8 tokens: M = 8) issued three small DMAs per expert beside the
expert's one gathered matrix, and each DMA pays its fixed cost on the queues. Here, when ``aᵀ``
fits SBUF staged once for all selections (``a`` shared by all of them, or one row block per
selection), selections run in blocks of ``G`` (a ``fori_loop`` over blocks, one over the
selections of a block): selection ``i`` of a block accumulates its M result columns at ``i·M`` of
each 128-column chunk's PSUM columns, and after the block every chunk is rounded, transposed back
(its ``G·M`` rows on the partitions) and the block's rows are stored by one DMA. The same matmuls
on the same operands, rounded once each: the results are those of lower/gathered_matmul.py.
"""

from __future__ import annotations

from contextlib import contextmanager

from ...ir.dtypes import float32
from ...nki.types import Affine, DimSlice
from ...nki.types import access_of as _acc

P = 128
BANK_F32 = 512
MAX_BANKS = 4
MIN_BLOCK = 4  # selections per block at least: with M > 32 rows a selection's store is large
#               enough that blocks of 2 gained nothing (64 tokens per expert ran slower)


def block_size(m: int, chunks: int) -> int:
    """Selections per block: the most (up to 128 / M) whose results fit ``MAX_BANKS`` banks; 0
    when fewer than ``MIN_BLOCK`` do."""
    g = P // m
    while g >= MIN_BLOCK:
        ns = g * m
        per_bank = BANK_F32 // ns
        if per_bank and -(-chunks // per_bank) <= MAX_BANKS:
            return g
        g -= 1
    return 0


@contextmanager
def loop(b, n: int):
    """A ``fori_loop`` over [0, n) yielding its index as an Affine, or 0 without a loop when
    n == 1 (a one-trip loop would hide the body's tiles from buffer rotation)."""
    if n == 1:
        yield Affine.of(0)
        return
    with b.fori_loop(0, n) as i:
        yield Affine.of(i)


def blocks_apply(kern, max_staged: int) -> bool:
    """M > 1, ``a`` shared by every selection or one row block per selection, ``aᵀ`` staged once
    within ``max_staged`` bytes per partition, and at least ``MIN_BLOCK`` selections per block."""
    if kern.m == 1 or not (kern.na == 1 or kern.group == 1) or kern.n < 2:
        return False
    if kern.q * kern.na * kern.m * kern.dt.itemsize > max_staged:
        return False
    return block_size(kern.m, -(-kern.n_cols // P)) > 0


def selection_blocks(kern, idx, at) -> None:
    """Every selection of ``kern`` (a gathered_matmul._Kernel), ``at`` staged once: full blocks in
    a loop, the remainder after it."""
    chunks = -(-kern.n_cols // P)
    g = min(block_size(kern.m, chunks), kern.n)
    full, rest = divmod(kern.n, g)
    if full:
        with loop(kern.b, full) as blk:
            _block(kern, idx, at, blk * g, g, chunks)
    if rest:
        _block(kern, idx, at, Affine.of(full * g), rest, chunks)


def _block(kern, idx, at, s0: Affine, g: int, chunks: int) -> None:
    """Selections [s0, s0 + g): their results side by side in PSUM, one store."""
    b, p, q, m, n_cols = kern.b, kern.p, kern.q, kern.m, kern.n_cols
    ns = g * m
    per_bank = BANK_F32 // ns
    banks = [b.alloc((P, per_bank * ns), float32, "psum", name="acc") for _ in range(-(-chunks // per_bank))]
    with loop(kern.b, g) as i:
        sl = s0 + i
        w = kern.gather(idx, sl)
        row = sl * m if kern.group == 1 else Affine.of(0)  # this selection's rows of a
        for c in range(chunks):
            c0, nc = c * P, min(P, n_cols - c * P)
            bank, cc = divmod(c, per_bank)
            for j in range(q):
                b.nc_matmul(
                    dst=_acc(banks[bank], (0, nc), DimSlice(i * m + cc * ns, m, 1)),
                    stationary=_acc(w, (0, p), (j * n_cols + c0, nc)),
                    moving=_acc(at, (0, p), DimSlice(row + j * kern.na * m, m, 1)),
                    accumulate=j > 0,
                )
    out = b.alloc((P, n_cols), kern.out_dt, name="y_rows")
    for c in range(chunks):
        c0, nc = c * P, min(P, n_cols - c * P)
        bank, cc = divmod(c, per_bank)
        rounded = b.alloc((P, ns), kern.round_dt, name="y_t")
        b.tensor_copy(dst=_acc(rounded, (0, nc), (0, ns)), src=_acc(banks[bank], (0, nc), (cc * ns, ns)))
        ps = b.alloc((P, P), kern.round_dt, "psum", name="ps_y")
        b.nc_transpose(dst=_acc(ps, (0, ns), (0, nc)), data=_acc(rounded, (0, nc), (0, ns)))
        b.tensor_copy(dst=_acc(out, (0, ns), (c0, nc)), src=_acc(ps, (0, ns), (0, nc)), engine="scalar")
    b.dma_copy(
        dst=_acc(kern.y_rows, DimSlice(s0 * m, ns, 1), (0, n_cols)), src=_acc(out, (0, ns), (0, n_cols))
    )
