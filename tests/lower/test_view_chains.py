"""A computed value reached through transposes and a copying reshape (attention's
``(p @ v).transpose(0, 2, 1, 3).reshape(s, h·d)``) is computed straight into the reshaped layout
(lower/view_chains.py): no HBM -> HBM copy, the value crosses HBM once each way. Counts are
asserted on the NKI IR; numerics against float64 NumPy on the NKI interpreter and the
simulator."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp
from nkigen_lite.testing import assert_close

BF16 = ml_dtypes.bfloat16


def _walk(block, mult=1):
    for op in block:
        if isinstance(op, ForiLoopOp):
            yield from _walk(op.body, mult * op.trip_count)
        else:
            yield op, mult


def _hbm_to_hbm(kern) -> int:
    return sum(
        1
        for op, _ in _walk(kern.nki.body)
        if isinstance(op, DmaCopyOp)
        and op.access("src").space.name == "HBM"
        and op.access("dst").space.name == "HBM"
    )


def heads_merged(x, w, wo):
    """Per-head products (h, s, d) merged to (s, h·d) and projected: the layer's O path."""
    o = x @ w  # (h, s, d)
    h, s, d = o.shape
    return o.transpose(1, 0, 2).reshape(s, h * d) @ wo


def heads_merged_out(x, w):
    """The same merge returned as the kernel's output."""
    o = x @ w
    h, s, d = o.shape
    return o.transpose(1, 0, 2).reshape(s, h * d)


def _args(dtype, seed=0, h=4, s=256, k=64, d=128):
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((h, s, k)).astype(dtype),
        rng.standard_normal((h, k, d)).astype(dtype) / 8,
        rng.standard_normal((h * d, 96)).astype(dtype) / 16,
    ]


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["f32", "bf16"])
def test_merged_heads_feed_the_projection_without_a_copy(dtype):
    x, w, wo = _args(dtype)
    kern = nk.compile(heads_merged, x, w, wo)
    assert _hbm_to_hbm(kern) == 0
    st = kern.stats()
    merged = 256 * 4 * 128 * np.dtype(dtype).itemsize
    # inputs + output once, the merged (s, h·d) value written once and read once
    assert st.dma_bytes == x.nbytes + w.nbytes + wo.nbytes + 256 * 96 * np.dtype(dtype).itemsize + 2 * merged
    ref = np.einsum("hsk,hkd->shd", *(np.asarray(a, np.float64) for a in (x, w))).reshape(256, -1)
    ref = ref @ np.asarray(wo, np.float64)
    tol = nk.bfloat16 if dtype is BF16 else nk.float32
    feeds = {"x": x, "w": w, "wo": wo}
    assert_close(kern.run(feeds)["y"], ref, tol, what="merged heads, interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, tol, what="merged heads, simulator")


def test_merged_heads_output_is_written_in_place():
    x, w, _ = _args(np.float32, seed=1)
    kern = nk.compile(heads_merged_out, x, w)
    assert _hbm_to_hbm(kern) == 0
    assert kern.stats().hbm_traffic_ratio == pytest.approx(1.0)
    ref = np.einsum("hsk,hkd->shd", np.float64(x), np.float64(w)).reshape(256, -1)
    feeds = {"x": x, "w": w}
    assert_close(kern.run(feeds)["y"], ref, nk.float32, what="merged output, interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, nk.float32, what="merged output, simulator")


def test_chain_read_twice_keeps_its_copy():
    """A product also read in its own layout keeps a row-major home (results still exact)."""

    def fn(x, w):
        o = x @ w
        h, s, d = o.shape
        return o.transpose(1, 0, 2).reshape(s, h * d).sum(-1), o.sum(1)

    x, w, _ = _args(np.float32, seed=2, s=128)
    kern = nk.compile(fn, x, w)
    out = kern.run({"x": x, "w": w})
    o = np.einsum("hsk,hkd->hsd", np.float64(x), np.float64(w))
    assert_close(out["y0"], o.transpose(1, 0, 2).reshape(128, -1).sum(-1), nk.float32, what="merged sum")
    assert_close(out["y1"], o.sum(1), nk.float32, what="own-layout sum")


def layer_attention(q, k, v, w_o):
    """The attention of benchmarks/model_targets.py's Qwen3 layer: q (1, S, H, D), k / v
    (1, S, G, D) bf16, np.repeat of the KV heads, causal -1e4 mask, fp32 softmax cast to bf16,
    heads merged to (S, H·D) for the O projection."""
    _, seq, heads, hd = q.shape
    k = np.repeat(k, heads // k.shape[2], axis=2)
    v = np.repeat(v, heads // v.shape[2], axis=2)
    q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    s = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(hd)
    s = s + np.triu(np.full((seq, seq), -1e4, np.float32), 1)[None, None]
    s = s.astype(np.float32)
    e = np.exp(s - s.max(-1, keepdims=True))
    p = (e / e.sum(-1, keepdims=True)).astype(q.dtype)
    return (p @ v).transpose(0, 2, 1, 3).reshape(1, seq, heads * hd) @ w_o


def layer_attention_reference(q, k, v, w_o):
    """float64, from the definition."""
    q, k, v, w_o = (np.asarray(a, np.float64) for a in (q, k, v, w_o))
    _, seq, heads, hd = q.shape
    k = np.repeat(k, heads // k.shape[2], axis=2)
    v = np.repeat(v, heads // v.shape[2], axis=2)
    s = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd)
    s = np.where(np.tril(np.ones((seq, seq), bool)), s, s - 1e4)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", p, v).reshape(1, seq, heads * hd) @ w_o


def layer_inputs(seq, heads, kv, hd, out, seed=0):
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((1, seq, heads, hd)).astype(BF16),
        rng.standard_normal((1, seq, kv, hd)).astype(BF16),
        rng.standard_normal((1, seq, kv, hd)).astype(BF16),
        (rng.standard_normal((heads * hd, out)) / np.sqrt(heads * hd)).astype(BF16),
    ]


def test_qwen3_layer_attention_output_is_not_copied():
    """Qwen3-0.6B attention (16/8 heads, head dim 128, seq 128) into its O projection: the
    attention output is written in the (s, h·d) layout the projection reads (was an HBM -> HBM
    copy of 512 KiB with 256-byte runs)."""
    kern = nk.compile(layer_attention, *layer_inputs(128, 16, 8, 128, 1024))
    assert _hbm_to_hbm(kern) == 0


def test_layer_attention_matches_float64():
    """4 / 2 heads, head dim 64, seq 256: interpreter and simulator against float64."""
    args = layer_inputs(256, 4, 2, 64, 96, seed=5)
    kern = nk.compile(layer_attention, *args)
    assert _hbm_to_hbm(kern) == 0
    ref = layer_attention_reference(*args)
    feeds = dict(zip(("q", "k", "v", "w_o"), args))
    assert_close(kern.run(feeds)["y"], ref, nk.bfloat16, what="layer attention, interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, nk.bfloat16, what="layer attention, simulator")
