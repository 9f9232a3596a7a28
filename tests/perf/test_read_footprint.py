"""The minimum-traffic figure counts the input bytes the program selects (perf/read_footprint.py):
static slices their elements, gathers their rows; a strided slice no longer reports traffic
below the minimum."""

import numpy as np

import nkigen_lite as nk
from nkigen_lite.perf.read_footprint import input_read_bytes

F32 = np.float32


def _k(f, *shapes, dtypes=None):
    dtypes = dtypes or [F32] * len(shapes)
    return nk.compile(f, *(np.zeros(s, d) for s, d in zip(shapes, dtypes)))


def test_row_step_counts_selected_rows():
    k = _k(lambda x: x[::2] + 0.0, (64, 32))
    s, e = k.stats(), k.estimate()
    assert k.read_bytes() == {"x": 32 * 32 * 4}
    assert s.min_hbm_bytes == e.min_hbm_bytes == 2 * 32 * 32 * 4  # half of x in, y out
    assert s.hbm_bytes == s.min_hbm_bytes and s.hbm_traffic_ratio == 1.0
    assert e.ratio >= 1.0


def test_column_step_kernel_reading_all_of_x_shows_excess_traffic():
    k = _k(lambda x: x[:, ::2] + 0.0, (256, 64))
    s = k.stats()
    assert s.min_hbm_bytes == 2 * 256 * 32 * 4
    assert s.hbm_bytes >= s.min_hbm_bytes


def test_union_of_slices():
    g = nk.trace(lambda x: x[:, ::2] + x[:, 1::2]).trace(np.zeros((16, 8), F32))
    assert input_read_bytes(g) == {"x": 16 * 8 * 4}  # the two halves cover x
    g = nk.trace(lambda x: x[1:5] + x[3:7]).trace(np.zeros((16, 8), F32))
    assert input_read_bytes(g) == {"x": 6 * 8 * 4}  # rows 1..6
    g = nk.trace(lambda x: x[::2, :3].sum() + x[::4, 2:5].sum()).trace(np.zeros((16, 8), F32))
    assert input_read_bytes(g) == {"x": (8 * 3 + 4 * 3 - 4 * 1) * 4}  # overlap: rows 0,4,8,12 col 2


def test_composed_slices_transpose_and_reversal():
    g = nk.trace(lambda x: x[::2][:, 1:3].T * 2.0).trace(np.zeros((16, 8), F32))
    assert input_read_bytes(g) == {"x": 8 * 2 * 4}
    g = nk.trace(lambda x: x[::-2] + 1.0).trace(np.zeros((16, 8), F32))
    assert input_read_bytes(g) == {"x": 8 * 8 * 4}
    g = nk.trace(lambda x: x[::-2] + x[::2]).trace(np.zeros((16, 8), F32))
    assert input_read_bytes(g) == {"x": 16 * 8 * 4}  # odd rows and even rows


def test_gather_counts_gathered_rows_and_unused_inputs_nothing():
    k = _k(lambda x, i: np.take(x, i, axis=1), (128, 4096), (64,), dtypes=[F32, np.int32])
    assert k.read_bytes() == {"x": 128 * 64 * 4, "i": 64 * 4}
    # the rows taken, the ids and the output: the (128, 1) int32 column of row offsets
    # (iota * 4096) is one on-chip iota, no constant input (lower/affine_constants.py; it was
    # an HBM input const0 of 128 * 4 bytes before)
    assert k.constants == {}
    assert k.stats().min_hbm_bytes == 2 * 128 * 64 * 4 + 64 * 4
    g = nk.trace(lambda x, y: x + 1.0).trace(np.zeros((4, 4), F32), np.zeros((4, 4), F32))
    assert input_read_bytes(g) == {"x": 64, "y": 0}


def test_whole_reads_unchanged():
    k = _k(lambda a, b: a @ b, (256, 128), (128, 64))
    assert k.stats().min_hbm_bytes == (256 * 128 + 128 * 64 + 256 * 64) * 4
