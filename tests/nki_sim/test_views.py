"""Tensor views: indexing rules (partition dim kept on chip, dims dropped in HBM), shared storage,
reshape contiguity and .ap access patterns."""

import numpy as np
import pytest

from nkigen_lite.nki_sim import NkiSimError

X = np.arange(16 * 12, dtype=np.float32).reshape(16, 12)


def _inspect(nk, probe, x=X):
    """Run probe(nl, nisa, x_hbm, t_sbuf) inside a kernel; return what it returns plus a copy of x."""
    nki, nl, nisa = nk
    seen = {}

    @nki.jit
    def kernel(x):
        y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        seen["probe"] = probe(nl, nisa, x, t)
        nisa.dma_copy(dst=y, src=t)
        return y

    y = kernel(x)
    return seen["probe"], y


def test_integer_index_keeps_the_partition_dim_on_chip_only(nk):
    def probe(nl, nisa, x, t):
        return [
            t[0, :].shape,
            t[0:4, 3].shape,
            t[2].shape,
            x[3].shape,
            x[3, 5].shape,
            t[..., 0:8].shape,
            x[:, 1::3].shape,
            t.ndim,
            t.dtype is nl.float32,
            t.buffer is nl.sbuf,
            x.buffer is nl.shared_hbm,
        ]

    shapes, _ = _inspect(nk, probe)
    assert shapes == [(1, 12), (4,), (1, 12), (12,), (), (16, 8), (16, 4), 2, True, True, True]


def test_views_share_storage(nk):
    def probe(nl, nisa, x, t):
        window = t[0:4, 2:10:2]  # 4 x 4 strided window of t
        nisa.memset(dst=window, value=-1.0)
        col = t.reshape((16, 3, 4))[:, 1, 0:1]  # element (p, 4) of every partition
        nisa.memset(dst=col, value=-2.0)

    _, y = _inspect(nk, probe)
    expect = X.copy()
    expect[0:4, 2:10:2] = -1.0
    expect[:, 4] = -2.0
    np.testing.assert_array_equal(y, expect)


def test_strided_window_values(nk):
    def probe(nl, nisa, x, t):
        u = nl.ndarray((16, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=x[:, 1::3])
        nisa.dma_copy(dst=t[:, 0:4], src=u)

    _, y = _inspect(nk, probe)
    expect = X.copy()
    expect[:, 0:4] = X[:, 1::3]
    np.testing.assert_array_equal(y, expect)


def test_ap_ignores_the_view_and_addresses_the_storage(nk):
    def probe(nl, nisa, x, t):
        # element [i, j] of the pattern = x.flat[13 + 12 * i + 2 * j]; called on an unrelated view
        u = nl.ndarray((3, 5), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=x[7:8].ap(pattern=[[12, 3], [2, 5]], offset=13))
        nisa.dma_copy(dst=t[0:3, 0:5], src=u)
        # on chip: partitions 4..5 (step = 12 elements per partition), free elements 1, 4, 7
        v = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=v, src=t.ap(pattern=[[12, 2], [3, 3]], offset=4 * 12 + 1))
        nisa.dma_copy(dst=t[8:10, 0:3], src=v)

    _, y = _inspect(nk, probe)
    expect = X.copy()
    i, j = np.meshgrid(np.arange(3), np.arange(5), indexing="ij")
    expect[0:3, 0:5] = X.flat[13 + 12 * i + 2 * j]
    expect[8:10, 0:3] = X[4:6, 1:8:3]
    np.testing.assert_array_equal(y, expect)


def test_reshape_needs_contiguous_elements(nk):
    def probe(nl, nisa, x, t):
        ok = [
            x.reshape((4, 48)).shape,
            x.reshape(-1).shape,
            t.reshape((16, 2, 6)).shape,
            t[:, 0:6].reshape((16, 3, 2)).shape,
        ]
        errors = []
        for bad in (
            lambda: x[:, 0:6].reshape((96,)),
            lambda: t.reshape((8, 24)),
            lambda: t[:, 0:12:2].reshape((16, 6)),
            lambda: x.reshape((5, -1)),
        ):
            with pytest.raises(NkiSimError) as e:
                bad()
            errors.append(str(e.value))
        return ok, errors

    (ok, errors), _ = _inspect(nk, probe)
    assert ok == [(4, 48), (192,), (16, 2, 6), (16, 3, 2)]
    assert "not contiguous" in errors[0] and "keep the partition dim" in errors[1]
    assert "free dims are not contiguous" in errors[2] and "cannot reshape" in errors[3]
