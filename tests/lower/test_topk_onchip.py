"""topk reading its rows from the SBUF tile the group before it left them in, and the softmax
after it reading topk's values tile (transforms/lower/topk_onchip.py, onchip_rows.py,
``GroupEmitter._take_held``): gpt-oss's router at decode size without HBM scratch round trips.
Counts are read off the NKI IR; results on the NKI interpreter and the simulator against float64
NumPy (indices exact; f32 softmax of the picked logits: f32 tolerance 1e-5)."""

import ml_dtypes
import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllocOp
from nkigen_lite.nki.types import HbmType
from nkigen_lite.testing import assert_close

BF16 = ml_dtypes.bfloat16


def _route(x, b):
    v, i = nk.topk(x + b, 4)
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True), i


def _router(x, w, b):
    v, i = nk.topk(x @ w + b, 4)
    v = v.astype(np.float32)
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True), i


def _dmas(kern):
    return [op for op in kern.nki.walk() if op.name == "nki.dma_copy"]


def _scratch(kern):
    """HBM scratch buffers some instruction writes or reads (not kernel outputs)."""
    outs = {id(v) for v in kern.nki.outputs.values()}
    return [
        op
        for op in kern.nki.body
        if isinstance(op, AllocOp)
        and isinstance(op.result.type, HbmType)
        and id(op.result) not in outs
        and op.result.uses
    ]


def test_bias_topk_softmax_stays_on_chip_and_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    kern = nk.compile(_route, x, b)
    assert not _scratch(kern)
    assert len(_dmas(kern)) == 4  # x, b in; weights, indices out
    logits = x.astype(np.float64) + b.astype(np.float64)
    idx = np.argsort(-logits, axis=-1, kind="stable")[:, :4]
    top = np.take_along_axis(logits, idx, -1)
    e = np.exp(top - top.max(-1, keepdims=True))
    ref = e / e.sum(-1, keepdims=True)
    feeds = dict(zip(kern.input_names, (x, b)))
    for how, got in (("NKI interpreter", kern.run(feeds)), ("simulator", nk.simulate(kern, feeds))):
        y0, y1 = (got[n] for n in kern.output_names)
        np.testing.assert_array_equal(y1, idx, err_msg=how)
        assert_close(y0, ref, nk.float32, what=how)


def test_gpt_oss_router_has_no_scratch_round_trips():
    specs = [((8, 2880), nk.bfloat16), ((2880, 32), nk.bfloat16), ((32,), nk.bfloat16)]
    kern = nk.compile(nk.trace(_router).trace(*(nk.TensorType(s, d) for s, d in specs)))
    assert not _scratch(kern)
    # x, the bias row, the 9 weight prefetches in; weights and indices out
    assert len(_dmas(kern)) == 13
