"""Reference-port cases: gathers (``np.take``, ``table[ids]``, index arrays) written with our API.

Each case mirrors a test of the public reference (aws-neuron/nkipy) — the same shapes, index
values / dtypes and semantics, our own code — and is checked through ``nk.run``, ``Kernel.run``
and ``nk.simulate`` against NumPy on float64 copies (tests/reference_port/helpers.py):

- ``TAKE`` mirrors ``tests/unit/test_tensor_api.py::test_take`` (traced uint32 indices, 14
  parametrisations) and ``TAKE_STATIC`` its ``test_take_numpy_indices`` (NumPy uint32 index
  constants, 12) and ``test_take_scalar`` (Python int indices with axis None, 3);
- ``test_slice_extraction`` mirrors ``test_tensor_api.py::test_slice_extraction`` (``a[:, t, :]``
  with traced int32 ``t``, 3 shapes);
- ``test_rotary_embed`` mirrors ``test_tensor_api.py::test_rotary_embed`` (traced even / odd
  index vectors: ``np.take`` on the last axis and ``out[:, :, :, idx] = v``, 2 shapes);
- ``test_diagonal_gather`` mirrors ``test_tensor_api.py::test_diagonal_gather``
  (``a[np.arange(n), idx]``);
- ``test_view_as_index`` / ``test_single_view_as_index`` / ``test_embedding_lookup`` mirror
  ``tests/unit/test_indexing_slicing_comprehensive.py``'s ``test_view_as_index_pattern``,
  ``test_single_view_as_index_pattern`` and ``test_embedding_lookup_pattern``;
- ``test_token_embedding`` mirrors ``tests/test_token_embedding.py`` (``setup`` and
  ``test_edge_cases``: a (vocab, hidden) table gathered by (batch, seq) int32 token ids).
"""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import check

R = np.random.default_rng(20260613)

TAKE = [
    ((2, 3), 0, None),
    ((2, 3), 1, None),
    ((2, 3), [0, 1], None),
    ((2, 3), [[0, 1]], None),
    ((2, 3), [[0, 1], [1, 0]], None),
    ((2, 3), [0, 1], 0),
    ((2, 3), [[0, 1]], 1),
    ((2, 3), [[0, 1], [1, 0]], 0),
    ((2, 3), [[0, 1], [1, 0]], 1),
    ((2, 3, 4), [0, 1], 0),
    ((2, 3, 4), [[0, 1]], 1),
    ((2, 3, 4), [[0, 1], [1, 0]], 0),
    ((2, 3, 4), [[0, 1], [1, 0]], 1),
    ((2, 3, 4), [[0, 1], [1, 0]], 2),
]


@pytest.mark.parametrize("shape, indices, axis", TAKE)
def test_take_traced_indices(shape, indices, axis):
    a = R.random(shape).astype(np.float32)
    ids = np.array(indices).astype(np.uint32)
    check(lambda a, ids: np.take(a, ids, axis=axis), a, ids)


@pytest.mark.parametrize("shape, indices, axis", TAKE[2:])
def test_take_static_indices(shape, indices, axis):
    a = R.random(shape).astype(np.float32)
    ids = np.array(indices).astype(np.uint32)
    check(lambda a: np.take(a, ids, axis=axis), a)


@pytest.mark.parametrize("index", [0, 1, -1])
def test_take_python_int(index):
    a = R.random((2, 3)).astype(np.float32)
    check(lambda a: np.take(a, index, axis=None), a)


@pytest.mark.parametrize("shape, n", [((5, 10, 15), 3), ((10, 20, 30), 5), ((15, 25, 35), 7)])
def test_slice_extraction(shape, n):
    a = R.random(shape).astype(np.float32)
    t = R.integers(0, shape[1], n).astype(np.int32)
    check(lambda a, t: a[:, t, :], a, t)


def _rotary(x, even, odd, cos, sin):
    x0 = np.take(x, even, axis=x.ndim - 1)
    x1 = np.take(x, odd, axis=x.ndim - 1)
    out = np.empty_like(x)
    out[:, :, :, even] = x0 * cos - x1 * sin
    out[:, :, :, odd] = x0 * sin + x1 * cos
    return out


@pytest.mark.parametrize("B, L, HD, QHN", [(1, 1, 2, 1), (2, 3, 10, 4)])
def test_rotary_embed(B, L, HD, QHN):
    cos = R.random((B, L, 1, HD // 2)).astype(np.float32)
    sin = R.random((B, L, 1, HD // 2)).astype(np.float32)
    x = R.random((B, L, QHN, HD)).astype(np.float32)
    even = np.arange(0, HD, 2, dtype=np.int32)
    odd = np.arange(1, HD, 2, dtype=np.int32)
    check(_rotary, x, even, odd, cos, sin)


def test_diagonal_gather():
    a = R.random((32, 64)).astype(np.float32)
    idx = R.integers(0, 64, 32).astype(np.int32)
    check(lambda a, idx: a[np.arange(a.shape[0]), idx], a, idx)


def test_view_as_index():
    top = np.array([2, 5, 1, 8, 3], np.int32)
    w = np.array([0.8, 0.6, 0.9, 0.4, 0.7, 0.8, 0.6, 0.9, 0.4, 0.7], np.float32)

    def kernel(top, w):
        e = top[0:5]
        return e, w[e]

    check(kernel, top, w)


def test_single_view_as_index():
    top = np.array([1, 0], np.int32)
    w = np.array([[0.8, 0.6, 0.9], [0.4, 0.7, 0.8]], np.float32)

    def kernel(top, w):
        e = top[0]
        return e, w[e]

    check(kernel, top, w)


def test_embedding_lookup():
    table = R.standard_normal((1000, 512)).astype(np.float32)
    seqs = R.integers(0, 1000, (8, 64)).astype(np.int32)

    def kernel(table, seqs):
        flat = np.reshape(seqs[:, :5], (-1,))
        return np.reshape(table[flat], (8, 5, 512))

    _, k = check(kernel, table, seqs)
    st = k.stats()  # the 40 selected rows move once (read and written), never the 2 MB table
    assert st.dma_bytes < table.nbytes // 10 and st.hbm_traffic_ratio <= 1.05, st.summary()


@pytest.mark.parametrize(
    "vocab, hidden, ids",
    [
        (100, 64, R.integers(0, 100, (2, 8)).astype(np.int32)),
        (50, 64, np.array([[5]], np.int32)),
        (50, 64, np.array([[1, 2, 3], [4, 5, 6]], np.int32)),
    ],
)
def test_token_embedding(vocab, hidden, ids):
    table = R.standard_normal((vocab, hidden)).astype(np.float32)
    check(lambda table, ids: table[ids], table, ids)
