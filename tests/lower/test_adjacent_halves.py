"""Two windows of one HBM tensor side by side on its contiguous last axis move by one DMA
(transforms/lower/adjacent_halves.py): the halves ``x[..., :64]`` / ``x[..., 64:]`` of a
rotate-halves RoPE load as one tile, and the two halves of its concatenated output are computed
into one tile and stored once (before: two DMAs each, 128 B / 256 B runs; RoPE
(1,2048,16,128) q / (1,2048,8,128) k: DMA transfers 302 -> 143 us, ratio 3.95 -> 2.13).

Values are compared with NumPy float64 on the same inputs through the NKI interpreter and the
simulator. The results are float32 (bf16 x times f32 cos / sin): each output element is two
products and one sum, each rounded to f32, so it is within 4 ulp of the larger product
magnitude: rtol 0 with atol = 2^-21 * (|a c| + |b s|) elementwise, checked as a bound."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost
from nkigen_lite.perf.traffic import hbm_traffic
from tests.trace.numpy_workloads import rope

RNG = np.random.default_rng(2813)
BF16 = ml_dtypes.bfloat16


def _bound(q, cos, sin):
    d = q.shape[-1] // 2
    lo, hi = np.abs(q[..., :d]), np.abs(q[..., d:])
    c, s = np.abs(cos[None, :, None, :]), np.abs(sin[None, :, None, :])
    return np.concatenate([lo * c + hi * s, lo * s + hi * c], -1) * 2.0**-21


def _inputs(s, hq, hk):
    q = RNG.standard_normal((1, s, hq, 128)).astype(BF16)
    k = RNG.standard_normal((1, s, hk, 128)).astype(BF16)
    ang = RNG.uniform(-3, 3, (s, 64))
    return {"q": q, "k": k, "cos": np.cos(ang).astype(np.float32), "sin": np.sin(ang).astype(np.float32)}


def _loads_of(k, name):
    return [r for r in hbm_traffic(k.nki) if r.tensor == name]


def test_rope_halves_match_numpy_and_move_once():
    x = _inputs(256, 4, 2)
    k = nk.compile(rope, *x.values())
    f64 = {n: a.astype(np.float64) for n, a in x.items()}
    want = rope(f64["q"], f64["k"], f64["cos"], f64["sin"])
    bounds = (_bound(f64["q"], f64["cos"], f64["sin"]), _bound(f64["k"], f64["cos"], f64["sin"]))
    for how, out in (("Kernel.run", k.run(x)), ("nk.simulate", nk.simulate(k, x))):
        for got, w, bound in zip(out.values(), want, bounds):
            assert got.dtype == np.float32 and got.shape == w.shape, how
            assert np.all(np.abs(got.astype(np.float64) - w) <= bound), how
    s = k.stats()
    # every byte once, except cos and sin, read by the q group and again by the k group
    assert s.hbm_bytes == s.min_hbm_bytes + x["cos"].nbytes + x["sin"].nbytes
    # one DMA per row tile reads both halves of q (and of k), one stores both halves of y0
    q_reads = [r for r in _loads_of(k, "q") if r.direction == "read"]
    assert len(q_reads) == 1 and q_reads[0].nbytes == x["q"].nbytes
    for op in k.nki.walk():
        if isinstance(op, DmaCopyOp) and op.access("src").tensor.type.dtype.itemsize == 2:
            assert dma_cost(op, TRN2).chunk_bytes >= 128 * 2  # whole head rows, not halves


def test_rope_at_model_size_dma_bound_gone():
    """(1,2048,16,128) q / (1,2048,8,128) k: 34 DMAs (was 58), under 1.8x the roofline (2.13x
    before the loads went two tiles ahead, load_ahead.py; the DMA engines are now the busiest
    resource, as they should be)."""
    specs = [
        ((1, 2048, 16, 128), BF16),
        ((1, 2048, 8, 128), BF16),
        ((2048, 64), np.float32),
        ((2048, 64), np.float32),
    ]
    k = nk.compile(rope, *(np.zeros(sh, d) for sh, d in specs))
    assert k.stats().dma_count <= 34
    e = k.estimate()
    assert e.ratio < 1.8


def rope_interleaved(x, c, s):
    """RoPE on interleaved pairs (as benchmarks/cliff_sweep.py): x (S, H, D), c / s (S, 1, D/2)."""
    a, b = x[..., ::2], x[..., 1::2]
    return np.stack([a * c - b * s, a * s + b * c], -1).reshape(x.shape)


def test_interleaved_rope_matches_numpy_and_moves_every_byte_once():
    """x loaded once as whole rows (both slices read with step 2 on chip), the two results
    written with step 2 into one tile and stored once (interleaved_concat.py): no scratch
    buffer, traffic 1.0 (was 2.63 at 2048x32x128)."""
    x = RNG.standard_normal((256, 4, 128)).astype(BF16)
    ang = RNG.uniform(-3, 3, (256, 1, 64))
    c, s = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    k = nk.compile(rope_interleaved, x, c, s)
    xf, cf, sf = (t.astype(np.float64) for t in (x, c, s))
    want = rope_interleaved(xf, cf, sf)
    a, b = np.abs(xf[..., ::2]), np.abs(xf[..., 1::2])
    bound = np.stack([a * np.abs(cf) + b * np.abs(sf), a * np.abs(sf) + b * np.abs(cf)], -1).reshape(x.shape)
    bound *= 2.0**-21
    inputs = {"x": x, "c": c, "s": s}
    for how, out in (("Kernel.run", k.run(inputs)), ("nk.simulate", nk.simulate(k, inputs))):
        (got,) = out.values()
        assert got.dtype == np.float32 and got.shape == want.shape, how
        assert np.all(np.abs(got.astype(np.float64) - want) <= bound), how
    st = k.stats()
    assert st.hbm_bytes == st.min_hbm_bytes
    assert not any(r.tensor.startswith("scratch") for r in hbm_traffic(k.nki))


def test_interleaved_rope_at_model_size():
    """(2048,32,128) bf16 with f32 (2048,1,64) cos / sin: 718.5 -> 302.2 us (5.03x -> 2.12x)."""
    specs = [((2048, 32, 128), BF16), ((2048, 1, 64), np.float32), ((2048, 1, 64), np.float32)]
    k = nk.compile(rope_interleaved, *(np.zeros(sh, d) for sh, d in specs))
    assert k.stats().hbm_traffic_ratio == 1.0
    assert k.estimate().ratio < 2.2
