"""A pure in-place update (an output aliasing an input, reached only through shape ops and
update bases) has a minimum traffic of the bytes it writes, not the whole buffer
(perf/inplace_footprint.py): a KV-cache row write reports traffic 1.0, not 0.0005."""

import ml_dtypes
import numpy as np

import nkigen_lite as nk
from nkigen_lite.perf.inplace_footprint import inplace_written_bytes

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(0)


def _kv_write(cache, x, pos):
    cache[:, pos] = x
    return cache


def _kv_args(seq=64, d=16):
    return (
        RNG.standard_normal((1, seq, 1, d)).astype(BF16),
        RNG.standard_normal((1, 1, 1, d)).astype(BF16),
        np.array([5], np.int32),
    )


def test_kv_cache_row_write_moves_only_the_row():
    args = _kv_args()
    k = nk.compile(nk.trace(_kv_write).trace(*args))
    row = 16 * 2
    assert k.written_bytes() == {"cache": row}
    s, e = k.stats(), k.estimate()
    assert s.min_hbm_bytes == e.min_hbm_bytes == row + row + 4  # x in, the row out, pos
    assert s.hbm_bytes == s.min_hbm_bytes and s.hbm_traffic_ratio == 1.0
    want = args[0].copy()
    want[:, 5] = args[1]
    got = k.run({"cache": args[0].copy(), "x": args[1], "pos": args[2]})
    np.testing.assert_array_equal(next(iter(got.values())), want)  # exact: a copy of bf16 rows


def test_scatter_rows_counts_its_rows_and_a_window_update_its_window():
    b = nk.Builder("scatter")
    t = b.add_input("t", (16, 8))
    ids = b.add_input("ids", (3,), nk.int32)
    r = b.add_input("r", (3, 8))
    b.graph.set_outputs({"y": b.scatter_rows(t, ids, r)}, aliases={"y": "t"})
    assert inplace_written_bytes(b.graph) == {"t": 3 * 8 * 4}

    b = nk.Builder("window")
    x = b.add_input("x", (16, 8))
    u = b.add_input("u", (2, 4))
    p = b.add_input("p", (), nk.int32)
    y = b.dynamic_update_slice(b.reshape(x, (16, 8)), u, [p, 0])
    b.graph.set_outputs({"y": y}, aliases={"y": "x"})
    assert inplace_written_bytes(b.graph) == {"x": 2 * 4 * 4}


def test_an_update_whose_result_is_also_read_counts_the_whole_buffer():
    def f(cache, x, pos):
        cache[:, pos] = x
        return cache, cache.sum(axis=1)

    args = _kv_args()
    k = nk.compile(nk.trace(f).trace(*args))
    assert k.written_bytes() == {}
    assert k.stats().min_hbm_bytes >= args[0].nbytes


def test_unaliased_update_counts_the_whole_output():
    b = nk.Builder("copy")
    t = b.add_input("t", (16, 8))
    ids = b.add_input("ids", (3,), nk.int32)
    r = b.add_input("r", (3, 8))
    b.set_outputs({"y": b.scatter_rows(t, ids, r)})
    assert inplace_written_bytes(b.graph) == {}
