"""Weights resident for a whole row pipeline (layer-scale weight reuse).

In a row pipeline over sequence tiles every matmul streams its B operand (the weights) once
per row tile. A weight that fits SBUF beside the pipeline's own tiles is instead loaded once,
before the loop nest, and every row tile reads it on chip: its HBM traffic drops from
``rows / 128`` reads to one. The SBUF left for weights is the partition's capacity minus the
pipeline members' planned bytes (an upper bound of their live tiles: the planner's estimates
assume full-width fp32 tiles) and ``MARGIN_BYTES``; rotation (rotation.py) then only doubles
what still fits, so resident weights win over second buffers. The weights kept are the subset
that saves the most HBM bytes within that room (exhaustive over the few matmuls of one
pipeline, greedy by saving beyond ``EXHAUSTIVE_LIMIT`` of them).
"""

from __future__ import annotations

from itertools import combinations

EXHAUSTIVE_LIMIT = 8  # matmuls per pipeline searched exhaustively (2^8 subsets)
MARGIN_BYTES = 8192  # per partition, for tiles the member estimates do not name (PSUM copies)


def choose_resident(emitters: list, member_bytes: int, sbuf_bytes: int) -> list:
    """Mark the matmul emitters whose B stays resident (``em.resident = True``); returns them.
    ``member_bytes``: the pipeline members' planned SBUF bytes per partition."""
    room = sbuf_bytes - member_bytes - MARGIN_BYTES
    cands = []
    for em in emitters:
        size = em.resident_bytes()
        if size is not None and size <= room:
            cands.append((em, size, em.b_bytes() * (em.m_tiles() - 1)))
    best: tuple = (0, ())
    if len(cands) <= EXHAUSTIVE_LIMIT:
        for r in range(1, len(cands) + 1):
            for combo in combinations(cands, r):
                if sum(c[1] for c in combo) <= room:
                    saved = sum(c[2] for c in combo)
                    if saved > best[0]:
                        best = (saved, combo)
    else:
        used, combo = 0, []
        for c in sorted(cands, key=lambda c: -c[2]):
            if used + c[1] <= room:
                used += c[1]
                combo.append(c)
        best = (0, tuple(combo))
    for em, _, _ in best[1]:
        em.resident = True
    return [c[0] for c in best[1]]
