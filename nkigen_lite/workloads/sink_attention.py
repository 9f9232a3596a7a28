"""gpt-oss attention with sink logits (prefill, causal, grouped-query): per query head a learned
sink logit joins the softmax denominator — softmax over ``[scores, sink]``, then the sink
column is dropped — so a head may attend to nothing. gpt-oss-20b shapes: 64 query heads, 8
key/value heads (8 query heads per kv head), head dim 64, bf16; its layers alternate full
causal attention and a sliding window of 128 tokens (``window``: key ``j`` is visible to query
``i`` when ``i - window < j <= i``).

The graph states the model's form literally (concat the sink column, softmax in fp32, slice it
off); grouped-query attention is a batched matmul of each kv head's group of query heads
against that head's keys (no repeated K/V). Inputs: ``q`` (heads, seq, d), ``k`` / ``v``
(kv_heads, seq, d), ``sinks`` (heads,) fp32."""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import bfloat16, float32, get_dtype
from ..ir.errors import BuildError
from ..tensor.builder import Builder
from .registry import Workload, register


def build_sink_attention(
    seq=256, heads=64, kv_heads=8, head_dim=64, window=None, dtype=bfloat16, literal=False
):
    name = "gptoss_sink_attention" + ("" if window is None else f"_window{window}")
    b = Builder(name)
    dt = get_dtype(dtype)
    group = heads // kv_heads
    q = b.add_input("q", (heads, seq, head_dim), dt)
    k = b.add_input("k", (kv_heads, seq, head_dim), dt)
    v = b.add_input("v", (kv_heads, seq, head_dim), dt)
    sinks = b.add_input("sinks", (heads,), float32)

    qg = b.reshape(q, (kv_heads, group * seq, head_dim))  # query head = kv head * group + g
    s = (qg @ b.transpose(k, (0, 2, 1))).astype(float32) * float(1 / np.sqrt(head_dim))
    s = b.reshape(s, (kv_heads, group, seq, seq))
    i, j = b.iota((seq, seq), axis=0), b.iota((seq, seq), axis=1)
    s = b.where(j <= i, s, float("-inf"))
    if window is not None:
        s = b.where(i - j < window, s, float("-inf"))
    sink = b.reshape(sinks, (kv_heads, group, 1, 1))
    if literal:  # the model's form: softmax over [scores, sink], the sink column dropped
        full = b.concat([s, b.broadcast_to(sink, (kv_heads, group, seq, 1))], axis=-1)
        e = b.exp(full - b.max(full, axis=-1, keepdims=True))
        p = (e / b.sum(e, axis=-1, keepdims=True))[..., :seq].astype(dt)
    else:  # the same softmax without the extra column: the sink joins the max and the sum
        m = b.maximum(b.max(s, axis=-1, keepdims=True), sink)
        e = b.exp(s - m)
        p = (e / (b.sum(e, axis=-1, keepdims=True) + b.exp(sink - m))).astype(dt)
    o = b.reshape(p, (kv_heads, group * seq, seq)) @ v
    b.set_outputs({"o": b.reshape(o, (heads, seq, head_dim))})
    return b.graph


def sink_attention_reference(q, k, v, sinks, window=None):
    """float64 NumPy from the model's definition: K/V repeated per query head, the sink logit
    appended as an extra score column, softmax, the column dropped."""
    q, k, v, sinks = (np.asarray(a, np.float64) for a in (q, k, v, sinks))
    heads, seq, d = q.shape
    rep = heads // k.shape[0]
    kr, vr = np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0)
    s = q @ kr.transpose(0, 2, 1) / np.sqrt(d)
    i, j = np.arange(seq)[:, None], np.arange(seq)[None, :]
    visible = j <= i
    if window is not None:
        visible &= j > i - window
    s = np.where(visible, s, -np.inf)
    full = np.concatenate([s, np.broadcast_to(sinks[:, None, None], (heads, seq, 1))], axis=-1)
    e = np.exp(full - full.max(-1, keepdims=True))
    p = (e / e.sum(-1, keepdims=True))[..., :seq]
    return {"o": p @ vr}


class _SinkAttention(Workload):
    """The reference needs the window, which is a build option, not an input."""

    def __init__(self, name, window, description):
        super().__init__(
            name,
            build_sink_attention,
            lambda **ins: sink_attention_reference(**ins, window=window),
            {"seq": 256, "heads": 64, "kv_heads": 8, "head_dim": 64, "window": window},
            description,
        )

    def graph(self, **opts):
        """The window is fixed per workload (its reference depends on it)."""
        if opts.get("window", self.defaults["window"]) != self.defaults["window"]:
            raise BuildError(
                f"workload {self.name!r}: window is {self.defaults['window']}, got {opts['window']} "
                "(call build_sink_attention and sink_attention_reference for other windows)"
            )
        return super().graph(**opts)

    def inputs(self, graph, seed: int = 0) -> dict[str, np.ndarray]:
        """Unit q / k / v; sink logits spread over [-2, 4] so some heads mostly attend to the
        sink and others barely do."""
        out = super().inputs(graph, seed)
        heads = out["sinks"].shape[0]
        out["sinks"] = np.linspace(-2.0, 4.0, heads).astype(np.float32)
        return out


SINK_ATTENTION = register(
    _SinkAttention(
        "gptoss_sink_attention",
        None,
        "gpt-oss causal GQA attention with per-head sink logits (64 q / 8 kv heads, d 64, bf16)",
    )
)
SINK_ATTENTION_SLIDING = register(
    _SinkAttention(
        "gptoss_sink_attention_sliding",
        128,
        "gpt-oss sliding-window (128) causal GQA attention with per-head sink logits, bf16",
    )
)
