"""A reshape that regroups a row gather's index dims moves onto the ids (canonical/gather_shapes.py):
the embedding lookup ``table[ids.reshape(-1)].reshape(b, s, h)`` moves the selected rows once."""

import numpy as np

import nkigen_lite as nk
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms import canonicalize

R = np.random.default_rng(7)
TABLE = R.standard_normal((1000, 64)).astype(np.float32)
IDS = R.integers(0, 1000, (8, 5)).astype(np.int32)


def lookup(table, ids):
    return np.reshape(table[np.reshape(ids, (-1,))], (8, 5, 64))


def test_the_reshape_moves_onto_the_ids_and_the_rows_move_once():
    assert canonicalize(nk.trace(lookup).trace(TABLE, IDS)).get("ReshapeOfGatherRows") == 1
    k = nk.compile(lookup, TABLE, IDS)
    st = k.stats()
    assert st.hbm_traffic_ratio <= 1.05, st.summary()  # no gathered copy reshaped in HBM (was 1.98)
    want = TABLE.astype(np.float64)[IDS]
    assert_close(k(TABLE, IDS), want, nk.float32)
    assert_close(nk.simulate(k, {"table": TABLE, "ids": IDS})["y"], want, nk.float32)


def test_a_reshape_that_changes_the_row_shape_is_kept():
    def split_rows(table, ids):
        return np.reshape(table[ids[0]], (5, 8, 8))

    g = nk.trace(split_rows).trace(TABLE, IDS)
    assert "ReshapeOfGatherRows" not in canonicalize(g)
    k = nk.compile(split_rows, TABLE, IDS)
    assert_close(k(TABLE, IDS), TABLE.astype(np.float64)[IDS[0]].reshape(5, 8, 8), nk.float32)
