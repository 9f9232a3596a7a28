"""The model-scale target graphs of issue 12, with the cost model's view of each: HBM traffic
against the minimum, the old (lower-bound) estimate, the scheduled estimate, the roofline, their
ratio, the critical resource, executed instructions, and the performance warnings. Run:

    uv run python benchmarks/model_targets.py [--markdown FILE] [--only SUBSTRING] [--warnings] [--long]

Graphs that do not compile today are listed with the error. Figures come from the cost model
(docs/costmodel.md), never from wall-clock time; compile time is printed for information.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nkigen_lite as nk  # noqa: E402
from nkigen_lite.workloads import get_workload  # noqa: E402
from tests.trace.numpy_workloads import rmsnorm, rope, silu, softmax  # noqa: E402

BF16 = ml_dtypes.bfloat16


def _zeros(*shapes, dtype=BF16):
    return [np.zeros(s, dtype) for s in shapes]


def gqa_causal(q, k, v):
    """Causal GQA written the obvious way: q (Hq, S, D), k / v (Hkv, S, D) bf16, np.repeat of the
    KV heads and f32 casts before the matmuls."""
    rep = q.shape[0] // k.shape[0]
    k = np.repeat(k, rep, axis=0).astype(np.float32)
    v = np.repeat(v, rep, axis=0).astype(np.float32)
    s = q.astype(np.float32) @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    n = s.shape[-1]
    s = s + np.triu(np.full((n, n), -1e4, np.float32), 1)[None]
    return (softmax(s) @ v).astype(q.dtype)


def attention_f32(q, k, v):
    """softmax(q kᵀ / √d) v, single head, f32."""
    return softmax(q @ k.T / np.sqrt(q.shape[-1])) @ v


def qwen3_layer(h, w_in, w_q, w_k, w_v, w_o, w_qn, w_kn, cos, sin, w_post, w_gu, w_dn, heads=16, kv_heads=8):
    """A Qwen3 decoder layer: h (1, S, D) bf16, head dim from w_qn."""
    _, seq, _ = h.shape
    hd = w_qn.shape[0]
    x = rmsnorm(h, w_in)
    q = rmsnorm((x @ w_q).reshape(1, seq, heads, hd), w_qn)
    k = rmsnorm((x @ w_k).reshape(1, seq, kv_heads, hd), w_kn)
    v = (x @ w_v).reshape(1, seq, kv_heads, hd)
    q, k = rope(q, k, cos, sin)
    k = np.repeat(k, heads // kv_heads, axis=2)
    v = np.repeat(v, heads // kv_heads, axis=2)
    q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    s = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(hd)
    s = s + np.triu(np.full((seq, seq), -1e4, np.float32), 1)[None, None]
    p = softmax(s.astype(np.float32)).astype(h.dtype)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(1, seq, heads * hd) @ w_o + h
    x = rmsnorm(o, w_post)
    g, u = np.split(x @ w_gu, 2, axis=-1)
    return (silu(g) * u) @ w_dn + o


def decode_step(x, w_in, w_qkv):
    """One token: rmsnorm, then the fused QKV projection."""
    return rmsnorm(x, w_in) @ w_qkv


def _qwen(seq, d=1024, heads=16, kv=8, hd=128, inter=3072):
    args = _zeros(
        (1, seq, d),
        (d,),
        (d, heads * hd),
        (d, kv * hd),
        (d, kv * hd),
        (heads * hd, d),
        (hd,),
        (hd,),
        (seq, hd // 2),
        (seq, hd // 2),
        (d,),
        (d, 2 * inter),
        (inter, d),
    )
    return nk.trace(qwen3_layer).trace(*args)


def _trace(fn, *arrays):
    return nk.trace(fn).trace(*arrays)


# (name, builder) in the order of the target table
TARGETS = [
    ("softmax 2048x4096 f32", lambda: get_workload("softmax").graph(shape=(2048, 4096))),
    ("rmsnorm 2048x4096 f32", lambda: get_workload("rmsnorm").graph(shape=(2048, 4096))),
    ("layernorm 512x1024 f32", lambda: get_workload("layernorm").graph(shape=(512, 1024))),
    (
        "SwiGLU MLP 128x1024x3072 f32",
        lambda: get_workload("swiglu_mlp").graph(tokens=128, hidden=1024, inter=3072),
    ),
    (
        "matmul 1024x4096x1024 bf16",
        lambda: get_workload("matmul").graph(m=1024, k=4096, n=1024, dtype=nk.bfloat16),
    ),
    (
        "matmul 4096x4096x4096 bf16",
        lambda: get_workload("matmul").graph(m=4096, k=4096, n=4096, dtype=nk.bfloat16),
    ),
    ("attention s512 d128 f32", lambda: get_workload("attention").graph(seq=512, d=128)),
    (
        "causal GQA 16q/8kv s128 d128 bf16 (np.repeat)",
        lambda: _trace(gqa_causal, *_zeros((16, 128, 128), (8, 128, 128), (8, 128, 128))),
    ),
    ("x.sum() 512x512 f32", lambda: _trace(lambda x: x.sum(), np.zeros((512, 512), np.float32))),
    ("x.sum(0) 1024x256 f32", lambda: _trace(lambda x: x.sum(0), np.zeros((1024, 256), np.float32))),
    ("softmax 4x151936 f32", lambda: get_workload("softmax").graph(shape=(4, 151936))),
    (
        "transpose(2,0,1).copy() 64x128x256 f32",
        lambda: _trace(lambda x: x.transpose(2, 0, 1).copy(), np.zeros((64, 128, 256), np.float32)),
    ),
    ("Qwen3-0.6B layer bf16 seq 128", lambda: _qwen(128)),
    ("Qwen3-0.6B layer bf16 seq 512", lambda: _qwen(512)),
    ("Qwen3-0.6B layer bf16 seq 2048", lambda: _qwen(2048)),
    (
        "decode: rmsnorm + QKV 1024->4096 bf16",
        lambda: _trace(decode_step, *_zeros((1, 1024), (1024,), (1024, 4096))),
    ),
]

# rows behind --long: the layer beyond the 2048 keys attention keeps resident in one pass
LONG_TARGETS = [
    ("Qwen3-0.6B layer bf16 seq 4096", lambda: _qwen(4096)),
    ("Qwen3-0.6B layer bf16 seq 8192", lambda: _qwen(8192)),
]

HEADER = (
    "| graph | traffic / min | old estimate us (lower bound) | scheduled us | roofline us "
    "| scheduled / roofline | critical | executed instr | warnings | compile s |"
)


def row(name: str, build) -> tuple[str, list]:
    """One table row (and the kernel's warnings) for a target graph."""
    try:
        g = build()
        t = time.perf_counter()
        k = nk.compile(g)
        secs = time.perf_counter() - t
        e, s = k.estimate(), k.stats()
        ws = k.warnings()
    except Exception as exc:  # report, do not stop the table
        msg = str(exc).splitlines()[0][:100] if str(exc) else type(exc).__name__
        return f"| {name} | does not compile: {msg} | | | | | | | | |", []
    us = 1e-3
    return (
        f"| {name} | {s.hbm_traffic_ratio:.2f} | {e.lower_bound_ns * us:,.1f} | "
        f"{e.scheduled_ns * us:,.1f} | {e.roofline_ns * us:,.1f} | {e.ratio:.2f} | "
        f"{e.critical_engine} | {s.instructions_dynamic:,} | {len(ws)} | {secs:.1f} |"
    ), ws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--only", help="only graphs whose name contains this")
    ap.add_argument("--warnings", action="store_true", help="print each kernel's warnings")
    ap.add_argument("--long", action="store_true", help="also the layer at seq 4096 and 8192 (LONG_TARGETS)")
    args = ap.parse_args()
    rows = [HEADER, "|" + "---|" * 10]
    print("\n".join(rows), flush=True)
    for name, build in TARGETS + (LONG_TARGETS if args.long else []):
        if args.only and args.only not in name:
            continue
        line, ws = row(name, build)
        rows.append(line)
        print(line, flush=True)
        if args.warnings:
            for w in ws:
                print(f"    {w}", flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
