"""Interpreter rules of the batch-norm statistics instructions (ops/bn.py).

The Vector engine computes the statistics in fp32 (the pages: inputs cast to fp32, results cast
to dst's dtype). The model: ``bn_stats`` takes the partition's free elements in row-major order,
splits them by index parity, and per half computes the count, the mean as an fp32 sum divided by
the count, and the sum of squared deviations from that mean in fp32 (two passes; the chip's own
order of operations is undocumented). ``bn_aggr`` combines the triples in fp32 with the
pairwise-update formula: ``n = Σ n_i``, ``mean = Σ n_i·m_i / n``,
``M2 = Σ (M2_i + n_i·(m_i − mean)²)``, variance ``M2 / n`` (population variance).

Refused instead of guessed (stricter than the chip): a bn_aggr triple whose count is not a
positive integer (not a bn_stats output; a count of 0 leaves its mean undefined).
"""

from __future__ import annotations

import numpy as np

from . import ops
from .interpret import NkiInterpreter as I

F32 = np.float32


def _halves(x: np.ndarray) -> list[np.ndarray]:
    return [x[:, 0::2], x[:, 1::2]]


@I.impl(ops.BnStatsOp)
def _bn_stats(it, op, args):
    raw = np.asarray(it.read_access(op, "data", args))
    x = raw.reshape(raw.shape[0], -1).astype(F32)
    cols = []
    for h in _halves(x):
        n = F32(h.shape[1])
        mean = (np.sum(h, axis=1, dtype=F32) / n).astype(F32)
        dev = (h - mean[:, None]).astype(F32)
        m2 = np.sum(dev * dev, axis=1, dtype=F32)
        cols += [np.full(x.shape[0], n, F32), mean, m2]
    it.write_access(op, "dst", args, np.stack(cols, axis=1))


@I.impl(ops.BnAggrOp)
def _bn_aggr(it, op, args):
    raw = np.asarray(it.read_access(op, "data", args))
    t = raw.reshape(raw.shape[0], -1, 3).astype(F32)
    n, m, m2 = t[..., 0], t[..., 1], t[..., 2]
    bad = np.argwhere(~((n > 0) & (n == np.floor(n))))
    if bad.size:
        p, j = (int(i) for i in bad[0])
        raise it.fail(
            op,
            f"triple {j} of partition {p} has count {float(n[p, j])!r}; bn_aggr reads bn_stats outputs "
            "(counts are positive integers; a zero count leaves the mean undefined)",
        )
    total = np.sum(n, axis=1, dtype=F32)
    mean = (np.sum(n * m, axis=1, dtype=F32) / total).astype(F32)
    d = (m - mean[:, None]).astype(F32)
    ss = np.sum(m2 + n * d * d, axis=1, dtype=F32)
    var = (ss / total).astype(F32)
    it.write_access(op, "dst", args, np.stack([mean, var], axis=1))
