"""Triangular mask constants (np.triu / np.tril) are built on chip, never read from HBM."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.transforms import canonicalize

N = 128
F32_RTOL = 1e-5  # f32 elementwise add / select: one rounding per element


def _ops(g):
    return [op.name for op in g.ops]


def _trace(fn, *arrays):
    return nk.trace(fn).trace(*arrays)


def _only_output(k, x):
    (v,) = k.run({"x": x}).values()
    return np.asarray(v)


def additive_triu(x):
    return x + np.triu(np.full((N, N), -1e4, np.float32), 1)


def where_tril(x):
    return np.where(np.tril(np.ones((N, N), bool)), x, -np.inf)


def scaled_tril_offset(x):
    return x * np.tril(np.ones((N, N), np.float32), -3)


def additive_triu_batched(x):
    return x + np.triu(np.full((N, N), -1e4, np.float32), 2)[None]


CASES = {
    "triu -1e4 k=1 added": (additive_triu, (N, N)),
    "tril bool in where": (where_tril, (N, N)),
    "tril 0/1 k=-3 multiplied": (scaled_tril_offset, (N, N)),
    "triu k=2 broadcast over heads": (additive_triu_batched, (2, N, N)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_mask_constant_is_built_on_chip(name):
    fn, shape = CASES[name]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    g = _trace(fn, x)
    counts = canonicalize(g)
    assert counts.get("TriangularMaskOnChip") == 1
    assert "tensor.constant" not in _ops(g)
    k = nk.compile(_trace(fn, x))
    # only x is read and the result written: no mask bytes cross HBM
    assert k.stats().dma_bytes == 2 * x.nbytes
    want = fn(x.astype(np.float64))
    got = _only_output(k, x)
    np.testing.assert_allclose(got, want, rtol=F32_RTOL, atol=0)


def test_non_triangular_and_small_constants_stay():
    rng = np.random.default_rng(1)
    two_valued = np.where(rng.random((N, N)) < 0.5, 0.0, -1e4).astype(np.float32)
    small = np.triu(np.full((16, 16), -1e4, np.float32), 1)  # folding would fold it back
    for c, shape in ((two_valued, (N, N)), (small, (16, 16))):
        g = _trace(lambda x, c=c: x + c, np.zeros(shape, np.float32))
        counts = canonicalize(g)
        assert "TriangularMaskOnChip" not in counts
        assert "tensor.constant" in _ops(g)
