"""The dim order of an HBM -> HBM copy's DMA: both sides permuted alike (the same elements pair
up), with the outer dim chosen by the DMA cost model.

The DMA model (perf/dma_cost.py) spreads an HBM -> HBM transfer over one DMA engine per 8 of
the destination's first dim (at most 16) and charges each descriptor by its contiguous run.
``x.reshape(S, H, D).transpose(1, 0, 2).copy()`` (a heads split) as written has the H heads
outermost: 32 of them use 4 of the 16 engines. Moving another dim to the front (here S) keeps
the innermost runs and uses all 16. Each dim moved to the front is costed and the cheapest
order kept (the written order on ties).
"""

from __future__ import annotations

from ...nki.target import Target
from ...perf.dma_cost import dma_efficiency, dma_engines_used
from .homes import HbmHome


def _run(h: HbmHome) -> int:
    """Elements of the innermost contiguous run of ``h`` (size-1 dims skipped)."""
    run = 1
    for n, s in zip(reversed(h.shape), reversed(h.strides)):
        if n == 1:
            continue
        if s != run:
            break
        run *= n
    return run


def _transfer_ns(src: HbmHome, dst: HbmHome, target: Target) -> float:
    """The DMA model's transfer time of the HBM -> HBM copy ``src`` -> ``dst`` as ordered."""
    n = 1
    for e in dst.shape:
        n *= e
    item = dst.base.type.dtype.itemsize
    parts = dst.shape[0] if dst.shape else 1
    chunk = min(n // max(parts, 1), _run(src), _run(dst)) * item
    eff = dma_efficiency(chunk, target)
    n_eng = dma_engines_used(parts, target)
    rate = target.dma_engine_bytes_per_s * 1e-9
    return max(n * item / (n_eng * rate * eff), 2 * n * item / (target.hbm_bytes_per_s * 1e-9))


def order_for_dma(src: HbmHome, dst: HbmHome, target: Target) -> tuple[HbmHome, HbmHome]:
    """``(src, dst)`` with the same dim moved to the front of both when the DMA model says the
    copy is faster so (equal shapes only; otherwise unchanged)."""
    if src.shape != dst.shape or len(src.shape) < 2:
        return src, dst
    best, best_ns = (src, dst), _transfer_ns(src, dst, target)
    rank = len(src.shape)
    for d in range(1, rank):
        if src.shape[d] <= 1:
            continue
        perm = [d] + [e for e in range(rank) if e != d]
        s2, d2 = src.transpose(perm), dst.transpose(perm)
        ns = _transfer_ns(s2, d2, target)
        if ns < best_ns * (1 - 1e-9):
            best, best_ns = (s2, d2), ns
    return best
