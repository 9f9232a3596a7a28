"""Online max-and-sum (transforms/lower/online.py): softmax and log_softmax over rows wider than
SBUF keep a running max and a rescaled running sum per chunk, so the input is read twice and
the output written once (HBM traffic counted, not timed: the 151,936-column bound is in
test_lower_reduce_scale.py), with results matching float64 NumPy even when the row max grows
from chunk to chunk."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.target import TRN2
from tests.lower.scale_helpers import check_three_ways
from tests.lower.test_lower_reduce_scale import softmax_graph, softmax_reference

RNG = np.random.default_rng(12)
# a small SBUF makes rows of a few thousand columns "too wide": several chunks per row, fast
SMALL = dataclasses.replace(TRN2, sbuf_bytes_per_partition=24 * 1024)


def _rows(shape, masked=True):
    """Rows whose max grows along the row (each chunk raises it: the rescale matters), plus a
    row of one large value and (``masked``) a row with -inf entries."""
    x = RNG.standard_normal(shape).astype(np.float32) * 3
    x += np.linspace(0, 60, shape[-1], dtype=np.float32)
    x[0, :] = -5.0
    x[0, 7] = 80.0
    if masked:
        x[1, ::3] = -np.inf
    return x


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_several_chunks_and_row_tiles_match_float64(log):
    g = softmax_graph((130, 3000), log)
    k = nk.compile(g, target=SMALL)
    s = k.stats()
    assert s.hbm_traffic_ratio <= 1.55, s.summary()
    xv = _rows((130, 3000), masked=not log)
    check_three_ways(g, {"x": xv}, softmax_reference(xv, log), scale=4.0, kernel=k)


def test_a_max_used_elsewhere_is_still_the_row_max():
    """The running max is complete after the chunks: a graph returning it gets the row max."""
    b = nk.Builder("lse")
    x = b.add_input("x", (4, 3000), nk.float32)
    m = b.max(x, axis=-1, keepdims=True)
    s = b.sum(b.exp(x - m), axis=-1, keepdims=True)
    b.set_outputs({"lse": m + b.log(s), "m": m})
    k = nk.compile(b.graph, target=SMALL)
    xv = _rows((4, 3000), masked=False)
    x64 = xv.astype(np.float64)
    m64 = x64.max(-1, keepdims=True)
    ref = {"lse": m64 + np.log(np.exp(x64 - m64).sum(-1, keepdims=True)), "m": m64}
    check_three_ways(b.graph, {"x": xv}, ref, scale=4.0, kernel=k)
