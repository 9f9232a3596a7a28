"""Qᵀ and Kᵀ of ``tensor.grouped_attention`` loaded by DMA transposes (``nki.dma_transpose``).

The score matmul ``S = Q Kᵀ`` needs the head dim on the partitions for both operands. For a
2-byte dtype and head dim 128 the DMA engines can transpose on the way in (HBM -> SBUF), so
TensorE does no transposes of Q or K, no PSUM bank holds them and no engine copies them out.
A hardware-DGE transpose takes a source of shape ``[16, A, B, 128]`` and writes
``[128, A, B, 16]`` (``dst[c, a, b, i] = src[i, a, b, c]``, verify_dma_transpose.py), so the
source view walks 16 rows ``i``, ``A`` heads and ``B`` blocks of rows; a head's ``Qᵀ`` / ``Kᵀ``
is then the contiguous ``(B, 16)`` columns of its slot ``a``:

- K (keys in natural order): ``src[i, g, b, c] = K[g, 16 b + i, c]``, one DMA for a group of
  KV heads, a tile ``[128, heads, N / 16, 16]``.
- Q, one query head per unit (grouped_attention.py): ``src[i, h, b, c] = Q[h, m0 + 16 b + i, c]``.
- Q, row pairs (grouped_pairs.py: unit slot ``j`` computes rows ``m0 + 2 ii + j`` of two heads):
  ``src[i, h, b, c] = Q[h, m0 + j + 32 b + 2 i, c]``, so column ``64 hh + 16 b + i`` of a head
  pair is row ``m0 + 2 (16 b + i) + j`` of head ``2 pr + hh``: the pair layout of the O store.
"""

from __future__ import annotations

from ...nki.types import access_of as _acc

P = 128
DGE_ROWS = 16  # src.shape[0] of a hardware-DGE transpose
# DMA group sizes, measured on the causal GQA (16 / 8 heads, s128): with one output tile
# per Q load, Q 2 / 4 / 8 / 16 heads x K 1 / 2 / 4 / 8 KV heads per transpose give 13.9-17.4 us,
# best 4 / 2; V loads after each Q group instead of after all Q and K loads are 0.4-2.3 us slower.
# Then one head pair per output tile (store): 13.9 -> 13.6 us (the last store, after the last
# unit, moves 64 KiB instead of 128); with it Q 2-16 x K 1-4 give 13.6-15.5 us, best 4 / 2 and
# 8 / 1; K before Q in each group 13.5-14.7 us (not kept: 0.1 us at best).
KV_HEADS_PER_TRANSPOSE = 2  # KV heads per K transpose DMA
Q_HEADS_PER_TRANSPOSE = 4  # query heads per Q transpose DMA (row pairs: per slot)
PAIRS_PER_STORE = 1  # row pairs: head pairs per output tile (O store)


def dma_transpose_fits(dtype, d: int, m: int, n: int) -> bool:
    """Q and K can be loaded transposed by DMA: a 2-byte dtype, head dim 128 (the transpose's
    ``src.shape[-1] == 128``) and query and key counts multiples of 16."""
    return dtype.itemsize == 2 and d == P and m % DGE_ROWS == 0 and n % DGE_ROWS == 0


def k_source(b, k, hk: int, n: int, d: int):
    """The view ``[16, hk, n / 16, d]`` of K the Kᵀ transposes read."""
    return b.hbm_view(k, (DGE_ROWS, hk, n // DGE_ROWS, d), (d, n * d, DGE_ROWS * d, 1), name="k_t_src")


def load_kt(b, src, g0: int, heads: int, n: int, dtype):
    """One DMA transpose: Kᵀ of KV heads ``[g0, g0 + heads)``, a tile ``[128, heads, n/16, 16]``."""
    t = b.alloc((P, heads, n // DGE_ROWS, DGE_ROWS), dtype, name="k_t")
    b.dma_transpose(
        dst=_acc(t, (0, P), (0, heads), (0, n // DGE_ROWS), (0, DGE_ROWS)),
        src=_acc(src, (0, DGE_ROWS), (g0, heads), (0, n // DGE_ROWS), (0, P)),
    )
    return t


def kt_columns(t, slot: int, keys: int):
    """Kᵀ of the head in ``slot`` of a ``load_kt`` tile over its first ``keys`` keys."""
    return _acc(t, (0, P), (slot, 1), (0, keys // DGE_ROWS), (0, DGE_ROWS))


def q_source(b, q, hq: int, m: int, d: int, step: int = 1, first: int = 0):
    """The view ``[16, hq, m / (16 step), d]`` of Q: element ``[i, h, b, c]`` is
    ``Q[h, first + 16 step b + step i, c]`` (step 1: consecutive rows; step 2: one slot of row
    pairs)."""
    rows = DGE_ROWS * step
    return b.hbm_view(
        q, (DGE_ROWS, hq, m // rows, d), (step * d, m * d, rows * d, 1), offset=first * d, name="q_t_src"
    )


def load_qt(b, src, h0: int, heads: int, b0: int, blocks: int, dtype):
    """One DMA transpose: Qᵀ of heads ``[h0, h0 + heads)``, row blocks ``[b0, b0 + blocks)`` of
    ``src`` (``q_source``), a tile ``[128, heads, blocks, 16]``."""
    t = b.alloc((P, heads, blocks, DGE_ROWS), dtype, name="q_t")
    b.dma_transpose(
        dst=_acc(t, (0, P), (0, heads), (0, blocks), (0, DGE_ROWS)),
        src=_acc(src, (0, DGE_ROWS), (h0, heads), (b0, blocks), (0, P)),
    )
    return t


def qt_columns(t, h: int, heads: int, blocks: int):
    """Qᵀ of ``heads`` heads from slot ``h`` of a ``load_qt`` tile: their columns, contiguous."""
    return _acc(t, (0, P), (h, heads), (0, blocks), (0, DGE_ROWS))
