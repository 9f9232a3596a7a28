"""nki.stream_shuffle on the NKI interpreter and, emitted as NKI source, on the NumPy simulator,
against NumPy written out here: per quadrant of 32 partitions dst row i = src row mask[i], bit
for bit (NaN payloads, -0.0, infinities kept); strided free accesses; the refused cases."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import emit_nki_source
from nkigen_lite.nki.types import Access, DimSlice
from nkigen_lite.nki.verify import verify
from nkigen_lite.nki_sim.errors import NkiSimError

REV = list(range(31, -1, -1))


def _kernel(p=128, n=24, mask=REV, dtype=nk.float32, start=0, dst_dtype=None, every_other=False):
    b = nk.nki.Builder("shuffle")
    x = b.add_input("x", (128, n), dtype)
    y = b.alloc((128, n), dst_dtype or dtype, "hbm", name="y")
    t = b.alloc((128, n), dtype, "sbuf")
    b.dma_copy(dst=t, src=x)
    u = b.alloc((128, n), dst_dtype or dtype, "sbuf")
    b.dma_copy(dst=u, src=x) if dst_dtype is None else b.memset(dst=u, value=0.0)
    rows = DimSlice(start, p, 1)
    if every_other:  # odd columns of src into even columns of dst and back
        for a, c in ((0, 1), (1, 0)):
            b.stream_shuffle(
                dst=Access(u, (rows, DimSlice(a, n // 2, 2))),
                src=Access(t, (rows, DimSlice(c, n // 2, 2))),
                mask=mask,
            )
    else:
        b.stream_shuffle(
            dst=Access(u, (rows, DimSlice(0, n, 1))), src=Access(t, (rows, DimSlice(0, n, 1))), mask=mask
        )
    b.dma_copy(dst=y, src=u)
    b.dealloc(t)
    b.dealloc(u)
    b.set_outputs({"y": y})
    return b.graph


def _both(g, x):
    verify(g)
    return [nk.nki.run(g, {"x": x})["y"], nk.simulate(emit_nki_source(g), {"x": x})["y"]]


def _want(x, mask, start=0, p=128):
    w = x.copy()
    for q in range(start, start + p, 32):
        w[q : q + 32] = x[[q + m for m in mask]]
    return w


def test_reversal_within_quadrants_is_bit_exact():
    x = np.random.default_rng(1).standard_normal((128, 24)).astype(np.float32)
    x[3, 4], x[40, 0], x[77, 9] = np.inf, -0.0, np.float32(np.nan)
    x.view(np.uint32)[90, 2] = 0x7FC00123  # a NaN payload
    for got in _both(_kernel(), x):
        assert np.array_equal(got.view(np.uint32), _want(x, REV).view(np.uint32))


def test_strided_free_accesses_and_part_of_the_partitions():
    x = np.random.default_rng(2).standard_normal((128, 24)).astype(np.float32)
    mask = [(5 * i + 3) % 32 for i in range(32)]
    want = _want(x, mask, start=64, p=64)
    want[64:128] = want[64:128].reshape(64, 12, 2)[:, :, ::-1].reshape(64, 24)
    for got in _both(_kernel(p=64, start=64, mask=mask, every_other=True), x):
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"p": 48}, "whole quadrants"),
        ({"mask": REV[:31]}, "mask must hold 32 partition indices"),
        ({"mask": [255] + REV[1:]}, "mask must hold 32 partition indices"),
        ({"dst_dtype": nk.bfloat16}, "moves raw elements"),
    ],
)
def test_the_verifier_refuses(kw, msg):
    with pytest.raises(nk.VerifyError, match=msg):
        verify(_kernel(**kw))


def test_the_simulator_refuses_a_partial_quadrant():
    src = emit_nki_source(_kernel(p=48))
    with pytest.raises(NkiSimError, match="whole quadrants"):
        nk.simulate(src, {"x": np.zeros((128, 24), np.float32)})
