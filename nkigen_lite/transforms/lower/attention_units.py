"""Pieces shared by the attention kernels built from per-unit generators (grouped, sink and
causal attention): the operand dims of q (..., H, M, D), k (..., G, N, D), v (..., G, N, Dv),
and the step that advances software-pipelined units one stage at a time."""

from __future__ import annotations


def attention_dims(q_shape, k_shape, v_shape) -> tuple[int, int, int, int] | None:
    """(M, D, N, Dv) when q, k, v have equal ranks >= 3, no empty dim, equal leading dims, a KV
    head count G dividing the query head count H, k's last dims (N, D) and v's keys N; else None."""
    qs, ks, vs = tuple(q_shape), tuple(k_shape), tuple(v_shape)
    if not (len(qs) == len(ks) == len(vs) >= 3) or min(qs + ks + vs) <= 0:
        return None
    if qs[:-3] != ks[:-3] or ks[:-2] != vs[:-2] or qs[-3] % ks[-3]:
        return None
    m, d = qs[-2:]
    n, dv = vs[-2:]
    if ks[-1] != d or ks[-2] != n:
        return None
    return m, d, n, dv


def advance(b, running: list) -> list:
    """Advance every running unit (a generator paired with its pending store, or None) by one
    stage, oldest first; a unit that finishes issues its store ``(dst, src)`` as a dma_copy on
    ``b``. Returns the units still running."""
    left = []
    for gen, store in running:
        try:
            next(gen)
            left.append((gen, store))
        except StopIteration:
            if store is not None:
                b.dma_copy(dst=store[0], src=store[1])
    return left
