"""Rotating buffers (``nki.alloc {bufs = k}``): the verifier's and the NKI interpreter's
capacity accounting, placement rules, and the interpreter still catching reads of elements an
iteration did not write although its buffer holds an earlier iteration's data."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ds

F32 = nk.float32
X = np.arange(384 * 512, dtype=np.float32).reshape(384, 512) / 1000


def _loop_kernel(body, trips=3, rows=128, cols=512, out_rows=128):
    b = nk.nki.Builder("rot")
    x = b.add_input("x", (rows * trips, cols), F32)
    y = b.alloc((out_rows * trips, cols), F32, "hbm", name="y")
    with b.fori_loop(0, trips) as i:
        body(b, x, y, i)
    b.set_outputs({"y": y})
    return b.graph


def _copy_rows(b, x, y, i, bufs=2):
    t = b.alloc((128, 512), F32, "sbuf", bufs=bufs)
    b.dma_copy(t, x[ds(i * 128, 128), :])
    u = b.alloc((128, 512), F32, "sbuf", bufs=bufs)
    b.tensor_scalar(u, t, "multiply", 2.0)
    b.dealloc(t)
    b.dma_copy(y[ds(i * 128, 128), :], u)
    b.dealloc(u)


@pytest.mark.parametrize("bufs", [1, 2, 3])
def test_rotation_does_not_change_results(bufs):
    g = _loop_kernel(lambda b, x, y, i: _copy_rows(b, x, y, i, bufs))
    out = nk.nki.run(g, {"x": X})["y"]
    np.testing.assert_array_equal(out, X.astype(np.float64) * 2)  # exact: a power-of-two scale


def test_bufs_round_trips_as_text():
    g = _loop_kernel(lambda b, x, y, i: _copy_rows(b, x, y, i, 3))
    text = str(g)
    assert "nki.alloc {bufs = 3} : tile<128x512xf32, sbuf>" in text
    assert str(nk.parse(text)) == text


def test_stale_rows_of_an_earlier_iteration_are_not_readable():
    """Iteration i writes rows [32 i, 32 i + 64) of a 2-buffer tile and reads rows [32, 64):
    iterations 0 and 1 wrote them; iteration 2 reuses iteration 0's buffer, whose rows 32..63
    hold iteration 0's data, but did not write them itself."""

    def body(b, x, y, i):
        t = b.alloc((128, 512), F32, "sbuf", bufs=2)
        b.dma_copy(t[ds(i * 32, 64), :], x[ds(i * 32, 64), :])
        b.dma_copy(y[ds(i * 32, 32), :], t[32:64, :])
        b.dealloc(t)

    two = _loop_kernel(body, trips=2, out_rows=32)  # iterations 0 and 1 read only what they wrote
    out = nk.nki.run(two, {"x": X[:256]}, verify=False)["y"]
    np.testing.assert_array_equal(out, np.concatenate([X[32:64], X[32:64]]))
    g = _loop_kernel(body, out_rows=32)
    with pytest.raises(nk.InterpretError, match=r"unwritten \(poisoned\) memory of %t.*\(iteration %i = 2\)"):
        nk.nki.run(g, {"x": X}, verify=False)


def _big(b, x, y, i, bufs, cols):
    t = b.alloc((128, cols), F32, "sbuf", bufs=bufs)
    b.dma_copy(t[:, 0:512], x[ds(i * 128, 128), :])
    b.dma_copy(y[ds(i * 128, 128), :], t[:, 0:512])
    b.dealloc(t)


def test_rotating_buffers_count_against_sbuf():
    cap = nk.nki.TRN2.sbuf_bytes_per_partition
    cols = cap // 4 // 2 + 1024  # one buffer fits; two do not
    ok = _loop_kernel(lambda b, x, y, i: _big(b, x, y, i, 1, cols))
    nk.nki.verify(ok)
    two = _loop_kernel(lambda b, x, y, i: _big(b, x, y, i, 2, cols))
    with pytest.raises(nk.VerifyError, match="SBUF peak"):
        nk.nki.verify(two)
    with pytest.raises(nk.InterpretError, match="SBUF exhausted"):
        nk.nki.run(two, {"x": X}, verify=False)


def test_rotating_psum_counts_banks():
    def body(b, x, y, i):
        tiles = [b.alloc((128, 512), F32, "psum", bufs=2) for _ in range(5)]  # 10 banks > 8
        for t in tiles:
            b.dealloc(t)
        _copy_rows(b, x, y, i, 1)

    g = _loop_kernel(body)
    with pytest.raises(nk.VerifyError, match="PSUM peak 10 banks"):
        nk.nki.verify(g)
    with pytest.raises(nk.InterpretError, match="PSUM exhausted: 8 of all 8 banks .*2 rotating buffers"):
        nk.nki.run(g, {"x": X}, verify=False)


def test_rotation_outside_a_loop_is_rejected():
    b = nk.nki.Builder("top")
    x = b.add_input("x", (128, 512), F32)
    y = b.alloc((128, 512), F32, "hbm", name="y")
    t = b.alloc((128, 512), F32, "sbuf", bufs=2)
    b.dma_copy(t, x)
    b.dma_copy(y, t)
    b.dealloc(t)
    b.set_outputs({"y": y})
    with pytest.raises(nk.VerifyError, match="bufs = 2 outside a loop"):
        nk.nki.verify(b.graph)


@pytest.mark.parametrize(
    ("bufs", "space", "rule"), [(0, "sbuf", "1..4"), (5, "sbuf", "1..4"), (2, "hbm", "only on-chip")]
)
def test_bad_bufs_are_rejected_at_construction(bufs, space, rule):
    b = nk.nki.Builder("bad")
    with pytest.raises(nk.BuildError, match=rf"nki.alloc bufs = {bufs}: .*{rule}"):
        b.alloc((128, 512), F32, space, bufs=bufs)
