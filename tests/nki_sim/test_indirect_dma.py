"""The simulator's indirect DMA (``.ap(vector_offset=..., indirect_dim=0)``): a gather and a
scatter against NumPy, and its strictness rules (HBM only, an SBUF (P, 1) int32 / uint32
index, indirect_dim 0, bounds checked when the DMA runs, repeated scatter indices only with
identical rows)."""

import numpy as np
import pytest

from nkigen_lite.nki_sim import NkiSimError

TABLE = np.arange(40 * 6, dtype=np.float32).reshape(40, 6)


def run(nk, ids, body, table=TABLE):
    """Load ``ids`` ((P, 1) int32) into SBUF tile ``idx`` and call body(nl, nisa, table, idx, y)."""
    nki, nl, nisa = nk

    @nki.jit
    def kernel(table, ids):
        y = nl.ndarray(table.shape, dtype=table.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=y, src=table)
        idx = nl.ndarray(ids.shape, dtype=ids.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=ids)
        body(nl, nisa, table, idx, y)
        return y

    return kernel(table, ids)


def _col(*v, dtype=np.int32):
    return np.array(v, dtype).reshape(-1, 1)


def test_gather_then_scatter_moves_the_indexed_rows(nk):
    ids = _col(7, 0, 39, 7)

    def body(nl, nisa, table, idx, y):
        t = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(
            dst=t, src=table.ap(pattern=[[6, 4], [1, 4]], offset=1, vector_offset=idx, indirect_dim=0)
        )
        u = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=-1.0)
        nisa.dma_copy(dst=y.ap(pattern=[[6, 4], [1, 4]], offset=2, vector_offset=idx, indirect_dim=0), src=u)

    got = run(nk, ids, body)
    want = TABLE.copy()
    for k in (7, 0, 39):
        want[k, 2:6] = -TABLE[k, 1:5]
    np.testing.assert_array_equal(got, want)


def test_an_index_out_of_bounds_raises_when_the_dma_runs(nk):
    def body(nl, nisa, table, idx, y):
        t = nl.ndarray((3, 6), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=table.ap(pattern=[[6, 3], [1, 6]], vector_offset=idx, indirect_dim=0))

    with pytest.raises(NkiSimError, match=r"index 40 \(partition 2\) is out of bounds for the 40 rows"):
        run(nk, _col(0, 1, 40), body)
    with pytest.raises(NkiSimError, match=r"index -1 \(partition 0\)"):
        run(nk, _col(-1, 1, 2), body)


def test_repeated_scatter_indices_need_identical_rows(nk):
    def body(nl, nisa, table, idx, y):
        t = nl.ndarray((2, 6), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=table[0:2, :])  # two different rows
        nisa.dma_copy(dst=y.ap(pattern=[[6, 2], [1, 6]], vector_offset=idx, indirect_dim=0), src=t)

    with pytest.raises(
        NkiSimError, match=r"more than once with differing values .*write order is unspecified"
    ):
        run(nk, _col(5, 5), body)

    def same(nl, nisa, table, idx, y):
        t = nl.ndarray((2, 6), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=table.ap(pattern=[[0, 2], [1, 6]], offset=6))  # row 1 twice
        nisa.dma_copy(dst=y.ap(pattern=[[6, 2], [1, 6]], vector_offset=idx, indirect_dim=0), src=t)

    got = run(nk, _col(5, 5), same)
    np.testing.assert_array_equal(got[5], TABLE[1])


@pytest.mark.parametrize(
    ("make", "rule"),
    [
        (
            lambda nl, t, idx: t.ap(pattern=[[6, 2], [1, 6]], vector_offset=idx, indirect_dim=1),
            "only indirect_dim=0",
        ),
        (
            lambda nl, t, idx: t.ap(pattern=[[6, 3], [1, 6]], vector_offset=idx, indirect_dim=0),
            r"must be a \(3, 1\) column",
        ),
        (
            lambda nl, t, idx: t.ap(pattern=[[6, 2], [1, 7]], vector_offset=idx, indirect_dim=0),
            "reaches element 6 of a 6-element row",
        ),
        (
            lambda nl, t, idx: t.ap(pattern=[[6, 2], [1, 6]], vector_offset=t, indirect_dim=0),
            "must be an SBUF tensor",
        ),
        (
            lambda nl, t, idx: idx.ap(pattern=[[1, 2], [1, 1]], vector_offset=idx, indirect_dim=0),
            "must be in HBM",
        ),
    ],
)
def test_bad_indirect_patterns_raise(nk, make, rule):
    def body(nl, nisa, table, idx, y):
        make(nl, table, idx)

    with pytest.raises(NkiSimError, match=rule):
        run(nk, _col(1, 2), body)


def test_a_float_index_is_rejected(nk):
    def body(nl, nisa, table, idx, y):
        table.ap(pattern=[[6, 2], [1, 6]], vector_offset=idx, indirect_dim=0)

    with pytest.raises(NkiSimError, match="must be int32 or uint32, got float32"):
        run(nk, _col(1, 2, dtype=np.float32), body)
