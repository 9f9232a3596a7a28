"""The top-8 instructions (nki.max8, nki.find_index8, nki.match_replace8) on the NKI interpreter
and, emitted as NKI source, on the NumPy simulator, against NumPy written out here: the 8
largest per row descending, the first position of each value (repeated values: successive
positions), the first occurrences replaced. Undocumented cases (NaN, replacing a value that is
not there) are refused by both."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import emit_nki_source
from nkigen_lite.nki_sim.errors import NkiSimError

P, N = 128, 64


def _kernel(dtype=nk.float32, vals_from_max=True, imm=-1000.0):
    """x -> (v = max8(x), i = find_index8(x, vals), y = match_replace8(x, vals, imm)); vals is
    v, or the kernel input ``w`` when ``vals_from_max`` is false."""
    b = nk.nki.Builder("top8")
    x = b.add_input("x", (P, N), dtype)
    w = None if vals_from_max else b.add_input("w", (P, 8), nk.float32)
    outs = {
        "v": b.alloc((P, 8), nk.float32, "hbm", name="v"),
        "i": b.alloc((P, 8), nk.uint32, "hbm", name="i"),
        "y": b.alloc((P, N), dtype, "hbm", name="y"),
    }
    t = b.alloc((P, N), dtype, "sbuf")
    b.dma_copy(dst=t, src=x)
    v = b.alloc((P, 8), nk.float32, "sbuf")
    if vals_from_max:
        b.max8(dst=v, src=t)
    else:
        b.dma_copy(dst=v, src=w)
    i = b.alloc((P, 8), nk.uint32, "sbuf")
    b.find_index8(dst=i, data=t, vals=v)
    y = b.alloc((P, N), dtype, "sbuf")
    b.match_replace8(dst=y, data=t, vals=v, imm=imm)
    for name, tile in (("v", v), ("i", i), ("y", y)):
        b.dma_copy(dst=outs[name], src=tile)
    for tile in (t, v, i, y):
        b.dealloc(tile)
    b.set_outputs(outs)
    return b.graph


def _expected(x, vals, imm):
    """NumPy, row by row: positions of each value's successive occurrences; x with them replaced."""
    idx = np.zeros(vals.shape, np.int64)
    y = x.astype(np.float64).copy()
    for p in range(x.shape[0]):
        seen: dict = {}
        for j, val in enumerate(vals[p]):
            hits = [q for q in range(x.shape[1]) if float(x[p, q]) == float(val)]
            k = seen.get(float(val), 0)
            seen[float(val)] = k + 1
            idx[p, j] = hits[k]
            y[p, hits[k]] = imm
    return idx, y


def _both(g, inputs):
    nk.nki.verify(g)
    return [nk.nki.run(g, inputs), nk.simulate(emit_nki_source(g), inputs)]


@pytest.mark.parametrize("dtype", [nk.float32, nk.bfloat16, nk.int16])
def test_max8_find_index8_match_replace8_against_numpy(dtype):
    rng = np.random.default_rng(5)
    x = rng.integers(-6, 7, (P, N)).astype(dtype.np_dtype)  # many ties
    x[0, :] = -np.inf if dtype.is_float else -6  # a row of equal values
    xf = np.asarray(x, np.float64)
    want_v = -np.sort(-xf, axis=1)[:, :8]
    want_i, want_y = _expected(xf, want_v, -1000.0)
    for got in _both(_kernel(dtype), {"x": x}):
        np.testing.assert_array_equal(got["v"], want_v)
        np.testing.assert_array_equal(got["i"], want_i)  # ties: ascending positions
        np.testing.assert_array_equal(np.asarray(got["y"], np.float64), want_y)


def test_a_missing_value_gives_all_ones_and_repeats_take_successive_matches():
    x = np.tile(np.arange(N, dtype=np.float32) % 5, (P, 1))  # 0 1 2 3 4 0 1 ...
    w = np.tile(np.array([3, 3, 3, 99, 0, 0.5, 4, 3], np.float32), (P, 1))
    g = _kernel(vals_from_max=False)
    # match_replace8 of a value x does not hold is undefined on the chip: refused by both
    with pytest.raises(nk.InterpretError, match="not in data often enough"):
        nk.nki.run(g, {"x": x, "w": w})
    with pytest.raises(NkiSimError, match="does not hold often enough"):
        nk.simulate(emit_nki_source(g), {"x": x, "w": w})
    # find_index8 alone: every documented case
    b = nk.nki.Builder("find")
    xi, wi = b.add_input("x", (P, N), nk.float32), b.add_input("w", (P, 8), nk.float32)
    out = b.alloc((P, 8), nk.uint32, "hbm", name="i")
    t, v, i = b.alloc((P, N)), b.alloc((P, 8)), b.alloc((P, 8), nk.uint32)
    b.dma_copy(dst=t, src=xi)
    b.dma_copy(dst=v, src=wi)
    b.find_index8(dst=i, data=t, vals=v)
    b.dma_copy(dst=out, src=i)
    for tile in (t, v, i):
        b.dealloc(tile)
    b.set_outputs({"i": out})
    ones = np.iinfo(np.uint32).max
    want = np.tile(np.array([3, 8, 13, ones, 0, ones, 4, 18], np.uint32), (P, 1))
    for got in _both(b.graph, {"x": x, "w": w}):
        np.testing.assert_array_equal(got["i"], want)


def test_negative_zero_equals_zero_and_keeps_its_sign():
    x = np.full((P, N), -5.0, np.float32)
    x[:, 3], x[:, 9] = -0.0, 0.0
    for got in _both(_kernel(), {"x": x}):
        assert got["v"][0, 0] == 0.0 and np.signbit(got["v"][0, 0])  # the first zero: -0.0
        np.testing.assert_array_equal(got["i"][0, :3], [3, 9, 0])


def test_nan_is_refused_by_both():
    x = np.zeros((P, N), np.float32)
    x[7, 5] = np.nan
    g = _kernel()
    with pytest.raises(nk.InterpretError, match=r"src holds NaN \(partition 7\)"):
        nk.nki.run(g, {"x": x})
    with pytest.raises(NkiSimError, match="src holds NaN at partition 7"):
        nk.simulate(emit_nki_source(g), {"x": x})


def test_top8_instructions_round_trip_through_text():
    g = _kernel()
    text = str(g)
    assert "nki.max8" in text and "nki.find_index8" in text and "nki.match_replace8" in text
    assert str(nk.parse(text)) == text
