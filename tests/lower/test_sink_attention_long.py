"""gpt-oss attention with sink logits beyond 512 keys (lower/sink_attention_long.py): the
model's graph at 1024-4096 keys becomes one ``tensor.sink_attention`` kernel (main before it
expanded the graph: 43.7x the minimum HBM traffic at 1024 keys); every tensor crosses HBM once
(K and V once per KV head); only key blocks some query sees are computed (causal: none above
the diagonal; sliding window 128: the two chunks of the window); the online softmax with the
sink folded into the running max and the denominator matches float64 NumPy computed from the
model's definition (K / V repeated, the sink appended as a score column, softmax, the column
dropped) on the NKI interpreter and the simulator. Tolerance: the output dtype's
(nkigen_lite.testing.tolerance: bf16 rtol 2^-7-ish with the dtype's atol, f32 tighter)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp, MatmulOp, TransposeOp
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower import sink_attention_long as long_kernel
from nkigen_lite.workloads.sink_attention import build_sink_attention

BF16 = ml_dtypes.bfloat16


def _reference(q, k, v, sinks, window=None):
    """float64, the model's definition: masked scores, the sink column appended, softmax, the
    column dropped, times V (K and V repeated for their query heads)."""
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


def _walk(block, mult=1):
    """(op, executions): loop bodies counted by their trip counts."""
    for op in block:
        if isinstance(op, ForiLoopOp):
            yield from _walk(op.body, mult * op.trip_count)
        else:
            yield op, mult


def _compile(h, g, s, d, window, dtype=BF16, literal=False):
    return nk.compile(build_sink_attention(s, h, g, d, window=window, dtype=dtype, literal=literal))


def _visible_chunks(m, window):
    """Per 128-row query tile, the 128-key chunks holding a key some row of the tile sees."""
    out = []
    for m0 in range(0, m, 128):
        last = min(m, m0 + 128) - 1
        first = max(0, m0 - window + 1) if window else 0
        out.append(range(first // 128, last // 128 + 1))
    return out


@pytest.mark.parametrize("seq, window", [(1024, None), (1024, 128), (2048, 128)])
def test_gpt_oss_moves_each_tensor_once_and_computes_visible_blocks_only(seq, window):
    """gpt-oss-20b heads (64 q / 8 kv, d 64, bf16) at 1024-2048 keys: one op, q and o once, K
    and V once per KV head, sinks once; one loop over the 8 KV heads (a few unrolled per
    iteration); the value products are exactly the visible (query head, tile, key chunk)
    triples, the score products one per key block of two chunks (r = 4 heads share a tile), Kᵀ
    transposed once per KV head."""
    h, g, d = 64, 8, 64
    kern = _compile(h, g, seq, d, window)
    assert kern.ir("canonicalize").count("tensor.sink_attention") == 1
    assert bytes_by_tensor(kern.nki) == {
        "q": {"read": h * seq * d * 2, "write": 0},
        "o": {"read": 0, "write": h * seq * d * 2},
        "k": {"read": g * seq * d * 2, "write": 0},
        "v": {"read": g * seq * d * 2, "write": 0},
        "sinks": {"read": h * 4, "write": 0},
    }
    assert kern.stats().hbm_traffic_ratio == pytest.approx(1.0)
    loops = [op for op in kern.nki.body if isinstance(op, ForiLoopOp)]
    per = long_kernel.heads_per_iteration(g, sum(len(t) for t in _visible_chunks(seq, window)) * h // g)
    assert [op.trip_count for op in loops] == [g // per]
    ops = list(_walk(kern.nki.body))
    tiles = _visible_chunks(seq, window)
    visible = sum(len(t) for t in tiles)  # (tile, chunk) pairs per query head
    # P [V | 1]: one matmul per (query head, visible chunk): moving = [V | 1], d + 1 columns
    pv = sum(n for op, n in ops if isinstance(op, MatmulOp) and op.access("moving").free_size == d + 1)
    assert pv == h * visible
    # S = Q Kᵀ: stationary Qᵀ on d partitions, one per (query head, key block of <= 2 chunks)
    blocks = sum(-(-len(t) // long_kernel.chunks_per_key_block(4)) for t in tiles)
    scores = [
        (op, n)
        for op, n in ops
        if isinstance(op, MatmulOp)
        and op.access("stationary").partitions == d
        and op.access("moving").partitions == d
    ]
    assert sum(n for _, n in scores) == h * blocks
    assert sum(n * op.access("moving").free_size for op, n in scores) == h * 128 * visible
    # Kᵀ: seq / 128 transposes of 128 keys per KV head (plus Qᵀ and Pᵀ ones of 128 rows)
    kt = sum(
        n
        for op, n in ops
        if isinstance(op, TransposeOp)
        and op.access("data").partitions == 128
        and op.access("data").tensor.name_hint.startswith("k_nat")
    )
    assert kt == g * seq // 128
    # DMAs: per KV head K, V, and per query tile one Q load and one O store; the sinks once
    dmas = sum(n for op, n in ops if isinstance(op, DmaCopyOp))
    assert dmas == g * (2 + 2 * seq // 128) + 1


@pytest.mark.parametrize(
    "h, g, s, d, window, dtype",
    [
        (4, 1, 1024, 64, None, BF16),  # 4 rows per partition, causal: up to 4 key blocks
        (2, 1, 2048, 64, 128, BF16),  # sliding window 128 at 2048 keys, 2 rows per partition
        (1, 1, 2048, 64, None, BF16),  # 1 row per partition, key blocks of 4 chunks, 4 rescales
        (4, 2, 640, 32, 300, BF16),  # 4 rows per partition, two KV heads, a window over key blocks
        (3, 1, 600, 64, None, BF16),  # 1 row per partition, a partial tile and key chunk
        (2, 2, 768, 64, None, np.float32),  # f32, plain multi-head
    ],
)
def test_numerics_interpreter_and_simulator(h, g, s, d, window, dtype):
    kern = _compile(h, g, s, d, window, dtype=dtype)
    assert kern.ir("canonicalize").count("tensor.sink_attention") == 1
    assert kern.stats().hbm_traffic_ratio == pytest.approx(1.0)
    inputs = _inputs(h, g, s, d, dtype)
    ref = _reference(**inputs, window=window)
    assert_close(kern.run(inputs)["o"], ref, dtype, what="NKI interpreter")
    assert_close(nk.simulate(kern, inputs)["o"], ref, dtype, what="simulator")


def test_literal_form_and_rescaled_extremes():
    """The model's literal concat form at 768 keys; logits growing along the keys (the
    running max rises block after block, so every rescale matters) and sinks from far below to
    far above the scores."""
    h, g, s, d = 4, 1, 768, 64
    kern = _compile(h, g, s, d, None, literal=True)
    assert kern.ir("canonicalize").count("tensor.sink_attention") == 1
    inputs = _inputs(h, g, s, d)
    ramp = np.linspace(0.2, 4.0, s)[None, :, None]
    inputs["k"] = (inputs["k"].astype(np.float32) * ramp).astype(BF16)
    inputs["q"] = (inputs["q"].astype(np.float32) * 3).astype(BF16)
    inputs["sinks"] = np.array([-60.0, 0.0, 40.0, 300.0], np.float32)
    ref = _reference(**inputs)
    assert_close(kern.run(inputs)["o"], ref, BF16, what="NKI interpreter")
    assert_close(nk.simulate(kern, inputs)["o"], ref, BF16, what="simulator")


@pytest.mark.slow
@pytest.mark.parametrize("window", [None, 128])
def test_gpt_oss_4096_keys(window):
    """One KV head group of gpt-oss at its 4096-token context (8 q / 1 kv heads), on the
    interpreter."""
    h, g, s, d = 8, 1, 4096, 64
    kern = _compile(h, g, s, d, window)
    assert kern.stats().hbm_traffic_ratio == pytest.approx(1.0)
    inputs = _inputs(h, g, s, d)
    assert_close(kern.run(inputs)["o"], _reference(**inputs, window=window), BF16, what="NKI interpreter")


def test_limits():
    assert long_kernel.heads_per_iteration(8, 288) == 2  # gpt-oss causal at 1024 keys
    assert long_kernel.heads_per_iteration(8, 120) == 4  # sliding window 128 at 1024 keys
    assert long_kernel.heads_per_iteration(8, 4224) == 1  # causal at 4096 keys
    """The body size counts visible (unit, chunk) pairs; gpt-oss at 4096 keys fits, causal at
    8192 does not (the sliding window does: its body grows linearly)."""
    assert long_kernel.visible_pairs(4096, 0, 8) == 8 * 32 * 33 // 2
    assert long_kernel.long_limit_message(4096, 4096, 64, 64, 2, 0, 8) is None
    assert long_kernel.long_limit_message(8192, 8192, 64, 64, 2, 128, 8) is None
    msg = long_kernel.long_limit_message(8192, 8192, 64, 64, 2, 0, 8)
    assert "16640 visible" in msg and "4608" in msg
    # K, Kᵀ and [V | 1] resident: 2 B x (320 x 128 + 40960 + 320 x 129) at 40960 keys, d 128
    msg = long_kernel.long_limit_message(40960, 40960, 128, 128, 2, 128, 1)
    assert "need 246400 B per partition at 40960 keys, more than the 98304" in msg
    assert long_kernel.chunks_per_key_block(4) == 2 and long_kernel.chunks_per_key_block(1) == 4


def test_too_large_is_refused_with_the_numbers():
    """8192 causal keys with 8 query heads per KV head: one BuildError naming the op, the shapes
    and the limit broken; the model's graph of that size is left to the general lowering."""
    b = nk.Builder("too_long")
    q = b.add_input("q", (8, 8192, 64), nk.bfloat16)
    k = b.add_input("k", (1, 8192, 64), nk.bfloat16)
    v = b.add_input("v", (1, 8192, 64), nk.bfloat16)
    sinks = b.add_input("sinks", (8,), nk.float32)
    b.set_outputs({"o": b.sink_attention(q, k, v, sinks, scale=0.125)})
    with pytest.raises(BuildError, match=r"tensor.sink_attention .*16640 visible .* exceed the 4608"):
        nk.compile(b.graph)
