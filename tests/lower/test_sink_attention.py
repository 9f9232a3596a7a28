"""gpt-oss attention with sink logits (canonical/sink_attention.py -> tensor.sink_attention,
lowered by lower/sink_attention.py): the model's graph becomes one op; every kernel tensor
crosses HBM once (K and V once per KV head, no scores or probabilities in HBM, the sinks one
4-byte read each); masks are built on chip; fully masked key chunks are skipped; and results
match float64 NumPy (computed here from the model's definition: K / V repeated, the sink
appended as a score column, softmax, the column dropped) on the NKI interpreter and the
simulator within the output dtype's tolerance (bf16: nkigen_lite.testing.tolerance)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.nki.ops import AffineSelectOp, DmaCopyOp, MatmulOp
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower import sink_attention as kernel
from nkigen_lite.workloads.sink_attention import build_sink_attention

from ..workload_kernels import graph_kernel

BF16 = ml_dtypes.bfloat16


def _reference(q, k, v, sinks, window=None):
    """float64: scores with the causal (and window) mask, the sink column appended, softmax,
    the column dropped, times V (K and V repeated for their query heads)."""
    q, k, v, sinks = (np.asarray(a, np.float64) for a in (q, k, v, sinks))
    h, m, d = q.shape
    k, v = np.repeat(k, h // k.shape[0], axis=0), np.repeat(v, h // v.shape[0], axis=0)
    s = np.einsum("hid,hjd->hij", q, k) / np.sqrt(d)
    i, j = np.indices((m, m))
    hidden = (j > i) | ((j <= i - window) if window else False)
    s[:, hidden] = -np.inf
    s = np.concatenate([s, np.broadcast_to(sinks[:, None, None], (h, m, 1))], axis=-1)
    e = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hij,hjd->hid", (e / e.sum(-1, keepdims=True))[..., :m], v)


def _inputs(h, g, s, d, dtype=BF16, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(sh).astype(dtype) for sh in ((h, s, d), (g, s, d), (g, s, d)))
    return {"q": q, "k": k, "v": v, "sinks": np.linspace(-2.0, 4.0, h).astype(np.float32)}


def _ops(kern, cls):
    return [op for op in kern.nki.body if isinstance(op, cls)]


def _compile(h, g, s, d, window, dtype=BF16, literal=False):
    return nk.compile(build_sink_attention(s, h, g, d, window=window, dtype=dtype, literal=literal))


@pytest.mark.parametrize("window", [None, 128])
def test_model_scale_moves_each_tensor_once(window):
    """gpt-oss-20b shapes (64 q / 8 kv heads, d 64, seq 256, bf16): one op; q and o cross HBM
    once, K and V once per KV head, the sinks once; 29 DMAs; scores on chip."""
    # the gptoss_sink_attention(_sliding) workload's graph: the session's compile of it
    kern = graph_kernel(build_sink_attention(256, 64, 8, 64, window=window, dtype=BF16))
    canon = kern.ir("canonicalize")
    assert canon.count("tensor.sink_attention") == 1, canon
    assert f"window = {window}" in canon if window else "window" not in canon.split("sink_attention")[1]
    traffic = bytes_by_tensor(kern.nki)
    assert traffic == {
        "q": {"read": 64 * 256 * 64 * 2, "write": 0},
        "o": {"read": 0, "write": 64 * 256 * 64 * 2},
        "k": {"read": 8 * 256 * 64 * 2, "write": 0},
        "v": {"read": 8 * 256 * 64 * 2, "write": 0},
        "sinks": {"read": 64 * 4, "write": 0},
    }
    assert kern.stats().hbm_traffic_ratio == pytest.approx(1.0)
    # per (pair of KV heads, query tile) one Q load and one O store; per pair one K load, per KV
    # head one V load; one for the sinks
    assert len(_ops(kern, DmaCopyOp)) == 4 * 2 * 2 + 4 + 8 + 1
    inputs = _inputs(64, 8, 256, 64)
    assert_close(kern.run(inputs)["o"], _reference(**inputs, window=window), BF16, what="NKI interpreter")


@pytest.mark.parametrize("window", [None, 128])
def test_literal_form_with_the_sink_column(window):
    """The model's own form — softmax over [scores, sink], the column sliced off — becomes the
    same kernel (canonical/sink_softmax.py, then the sink attention pattern)."""
    kern = _compile(8, 2, 256, 64, window, literal=True)
    assert kern.ir("canonicalize").count("tensor.sink_attention") == 1
    assert kern.stats().hbm_traffic_ratio == pytest.approx(1.0)
    inputs = _inputs(8, 2, 256, 64)
    ref = _reference(**inputs, window=window)
    assert_close(kern.run(inputs)["o"], ref, BF16, what="NKI interpreter")
    assert_close(nk.simulate(kern, inputs)["o"], ref, BF16, what="simulator")


def test_masks_on_chip_and_skipped_chunks():
    """Causal, 128-row tiles: the first tile's S covers one key chunk, the second two; masks
    are GpSimd affine_selects (no mask bytes from HBM) added through the Tensor engine only on
    the diagonal chunks."""
    h, g, s, d = 8, 2, 256, 64
    kern = _compile(h, g, s, d, None)
    mm = _ops(kern, MatmulOp)
    # S matmuls: (tile 0: 128 keys, tile 1: 256 keys) per unit; 4 units per (KV head, tile)
    n_units = h * s // 128 // 2
    scores = [op for op in mm if op.access("stationary").partitions == d]
    assert sorted(op.access("moving").free_size for op in scores) == [128] * n_units + [256] * n_units
    masks = [
        op
        for op in mm
        if op.attrs["accumulate"]
        and op.access("stationary").partitions == 128
        and op.access("moving").free_size == 128
        and op.access("dst").free_size == 128
    ]
    assert len(masks) == 2 * n_units  # one diagonal chunk per unit
    assert _ops(kern, AffineSelectOp)  # built on chip
    assert set(bytes_by_tensor(kern.nki)) == {"q", "k", "v", "sinks", "o"}


@pytest.mark.parametrize(
    "h, g, s, d, window, dtype",
    [
        (8, 2, 256, 64, None, BF16),  # 4 rows per partition
        (8, 2, 256, 64, 128, BF16),
        (4, 2, 256, 32, 100, BF16),  # 2 rows per partition, window not a chunk multiple
        (3, 1, 200, 64, None, BF16),  # 1 row per partition, a partial query tile and key chunk
        (2, 2, 384, 64, 96, np.float32),  # f32, plain multi-head
    ],
)
def test_numerics_interpreter_and_simulator(h, g, s, d, window, dtype):
    kern = _compile(h, g, s, d, window, dtype=dtype)
    assert kern.ir("canonicalize").count("tensor.sink_attention") == 1
    inputs = _inputs(h, g, s, d, dtype)
    ref = _reference(**inputs, window=window)
    assert_close(kern.run(inputs)["o"], ref, dtype, what="NKI interpreter")
    assert_close(nk.simulate(kern, inputs)["o"], ref, dtype, what="simulator")


def test_large_logits_and_dominant_sink():
    """Scores far above the sinks and sinks far above the scores: the stabiliser takes the
    larger, nothing overflows, masked keys stay at probability 0."""
    h, g, s, d = 4, 2, 256, 64
    kern = _compile(h, g, s, d, 128)
    inputs = _inputs(h, g, s, d)
    inputs["q"] = (inputs["q"].astype(np.float32) * 6).astype(BF16)
    inputs["sinks"] = np.array([-50.0, 0.0, 30.0, 200.0], np.float32)
    ref = _reference(**inputs, window=128)
    assert_close(kern.run(inputs)["o"], ref, BF16, what="NKI interpreter")
    assert_close(nk.simulate(kern, inputs)["o"], ref, BF16, what="simulator")


def test_rows_per_partition():
    assert kernel.rows_per_partition(8, 256) == 4
    assert kernel.rows_per_partition(2, 256) == 2
    assert kernel.rows_per_partition(6, 256) == 2
    assert kernel.rows_per_partition(8, 200) == 1
    assert kernel.rows_per_partition(1, 256) == 1


def test_intermediate_used_elsewhere_is_not_fused():
    """When the probabilities are also an output the pattern is left alone (they must exist)."""
    b = nk.Builder("probs_out")
    q = b.add_input("q", (2, 128, 64), nk.bfloat16)
    k = b.add_input("k", (1, 128, 64), nk.bfloat16)
    v = b.add_input("v", (1, 128, 64), nk.bfloat16)
    sinks = b.add_input("sinks", (2,), nk.float32)
    qg = b.reshape(q, (1, 256, 64))
    sc = (qg @ b.transpose(k, (0, 2, 1))).astype(nk.float32) * 0.125
    sc = b.reshape(sc, (1, 2, 128, 128))
    i, j = b.iota((128, 128), axis=0), b.iota((128, 128), axis=1)
    sc = b.where(j <= i, sc, float("-inf"))
    sink = b.reshape(sinks, (1, 2, 1, 1))
    m = b.maximum(b.max(sc, axis=-1, keepdims=True), sink)
    e = b.exp(sc - m)
    p = e / (b.sum(e, axis=-1, keepdims=True) + b.exp(sink - m))
    o = b.reshape(p.astype(nk.bfloat16), (1, 256, 128)) @ v
    b.set_outputs({"o": o, "p": p})
    kern = nk.compile(b.graph)
    assert "tensor.sink_attention" not in kern.ir("canonicalize")


def test_unsupported_shapes_are_refused_by_name():
    """A head dim beyond the partitions: one BuildError naming the op, the value and the rule."""
    b = nk.Builder("bad")
    q = b.add_input("q", (2, 600, 256), nk.bfloat16)
    k = b.add_input("k", (1, 600, 256), nk.bfloat16)
    v = b.add_input("v", (1, 600, 256), nk.bfloat16)
    sinks = b.add_input("sinks", (2,), nk.float32)
    b.set_outputs({"o": b.sink_attention(q, k, v, sinks, scale=0.125)})
    with pytest.raises(BuildError, match=r"tensor.sink_attention .*D 256, Dv 256 .* out of range.*D <= 128"):
        nk.compile(b.graph)
