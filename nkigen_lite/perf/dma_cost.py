"""The cost of one ``nki.dma_copy``: bytes moved, DMA engines used, efficiency, transfer time.

``t_transfer = max(bytes / (n_eng * rate * eff(chunk)), hbm_bytes / hbm_rate)`` with
``n_eng = min(engines, ceil(P / partitions_per_engine))`` (facts §7.2); the second term keeps
a transfer within the core's HBM share (§7.1: 360 GB/s, below the 16 x 23 B/ns of the engines).
``bytes`` is the element count times the wider of the two dtypes (a casting DMA reads or
writes the wider side); ``hbm_bytes`` counts each HBM side. Fixed costs — the HW-DGE issue and
the first-byte latency — are added by the kernel estimate, which decides whether they overlap.

The efficiency curve (``dma_efficiency``) is evaluated at the contiguous chunk one descriptor
moves: the bytes per partition, cut down to the longest contiguous run of either side (a
strided or transposing access moves short chunks). Below ``dma_min_efficient_bytes_per_partition``
(2 KiB) it is ``b / (b + b0)``: a fixed per-chunk overhead worth ``b0`` bytes of transfer, with
``b0`` chosen so the curve passes through the target's efficiency at 2 KiB (0.85 → b0 ≈ 361 B,
about 16 ns per chunk at 23 B/ns). That gives ~0.41 at 256 B and ~0.15 at 64 B ("severely
overhead-bound"). From 2 KiB to 4 KiB it rises linearly in log2(b) to 1.0, and stays 1.0 above
(saturation). Transfer time is strictly increasing in the bytes moved.

A ``nki.dma_transpose`` (``dma_transpose_cost``) moves at the measured DMA-transpose rate of
its source instead (``Target.dma_transpose_hbm_bytes_per_s`` 335 GB/s from HBM,
``dma_transpose_sbuf_bytes_per_s`` 215 GB/s from SBUF, facts §1.6 [NKIPY-HW] [ARCH-T2]: "up to
90 % / 50 % of DMA throughput"), taken as the rate of all 16 DMA engines and scaled down for
fewer partitions like any DMA; it has no descriptor-size curve of its own (the measured rate is
the whole figure), so its ``efficiency`` is that rate over the engines' 16 x 23 B/ns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..nki.ops import DmaCopyOp, DmaTransposeOp
from ..nki.target import Target
from ..nki.types import HbmType
from .layout import contiguous_run


@dataclass(frozen=True)
class DmaCost:
    """What one dma_copy moves and how long its transfer takes (fixed costs excluded)."""

    bytes: int
    hbm_bytes: int
    partitions: int
    engines: int
    chunk_bytes: int
    efficiency: float
    transfer_ns: float


def dma_efficiency(chunk_bytes: float, target: Target) -> float:
    """Fraction of the per-engine DMA rate reached with descriptors of ``chunk_bytes``."""
    b_min = target.dma_min_efficient_bytes_per_partition
    b_sat = target.dma_saturating_bytes_per_partition
    e_min = target.dma_efficiency_at_min_efficient
    if chunk_bytes >= b_sat:
        return 1.0
    if chunk_bytes >= b_min:
        return e_min + (1.0 - e_min) * math.log2(chunk_bytes / b_min) / math.log2(b_sat / b_min)
    b0 = b_min * (1.0 / e_min - 1.0)
    return chunk_bytes / (chunk_bytes + b0)


def dma_engines_used(partitions: int, target: Target) -> int:
    """DMA engines a transfer spreads over: one per ``dma_partitions_per_engine`` partitions."""
    return max(1, min(target.dma_engines, -(-partitions // target.dma_partitions_per_engine)))


def dma_cost(op: DmaCopyOp, target: Target) -> DmaCost:
    """Bytes, engines, chunk size, efficiency and transfer time of one dma_copy."""
    if isinstance(op, DmaTransposeOp):
        return dma_transpose_cost(op, target)
    dst, src = op.access("dst"), op.access("src")
    n = op.moved.size  # an indirect DMA's HBM side is the whole tensor it selects rows from
    itemsize = max(dst.dtype.itemsize, src.dtype.itemsize)
    nbytes = n * itemsize
    on_chip = [a for a in (dst, src) if not isinstance(a.tensor.type, HbmType)]
    partitions = (on_chip[0] if on_chip else dst).partitions
    per_partition = n // partitions
    chunk = min(per_partition, contiguous_run(dst), contiguous_run(src)) * itemsize
    n_eng = dma_engines_used(partitions, target)
    eff = dma_efficiency(chunk, target)
    hbm = sum(n * a.dtype.itemsize for a in (dst, src) if isinstance(a.tensor.type, HbmType))
    rate = target.dma_engine_bytes_per_s * 1e-9  # bytes per ns per engine
    ns = max(nbytes / (n_eng * rate * eff), hbm / (target.hbm_bytes_per_s * 1e-9))
    return DmaCost(
        bytes=nbytes,
        hbm_bytes=hbm,
        partitions=partitions,
        engines=n_eng,
        chunk_bytes=chunk,
        efficiency=eff,
        transfer_ns=ns,
    )


def dma_transpose_cost(op: DmaTransposeOp, target: Target) -> DmaCost:
    """Bytes, engines and transfer time of one dma_transpose (module docstring): the measured
    transpose rate of its source memory, scaled by the share of the 16 DMA engines it uses,
    and at most the core's HBM share for the bytes it reads from HBM."""
    dst, src = op.access("dst"), op.access("src")
    nbytes = dst.size * dst.dtype.itemsize
    from_hbm = isinstance(src.tensor.type, HbmType)
    full = target.dma_transpose_hbm_bytes_per_s if from_hbm else target.dma_transpose_sbuf_bytes_per_s
    n_eng = dma_engines_used(dst.partitions, target)
    rate = full * 1e-9 * n_eng / target.dma_engines  # bytes per ns
    hbm = nbytes if from_hbm else 0
    ns = max(nbytes / rate, hbm / (target.hbm_bytes_per_s * 1e-9))
    return DmaCost(
        bytes=nbytes,
        hbm_bytes=hbm,
        partitions=dst.partitions,
        engines=n_eng,
        chunk_bytes=dst.free_size * dst.dtype.itemsize,
        efficiency=full / (target.dma_engines * target.dma_engine_bytes_per_s),
        transfer_ns=ns,
    )
