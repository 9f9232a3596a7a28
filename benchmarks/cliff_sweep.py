"""Performance-cliff sweep: common NumPy programs (the op surface and model kernels of
/work/shared/reference/nkipy_ops_and_workloads.md) at real model sizes, each traced, compiled and
rated by the cost model: scheduled / roofline, HBM traffic / minimum, executed instructions and
the number of performance warnings. Rows are sorted worst ratio first. Run:

    uv run python benchmarks/cliff_sweep.py [--only SUBSTR] [--markdown FILE] [--warnings]

Deterministic (no random data: only shapes and dtypes reach the compiler). Figures come from the
cost model (docs/costmodel.md), never from wall-clock time; compile time is printed for
information. A row that does not compile is listed with the error.
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
from tests.trace.numpy_workloads import clamped_swiglu, rmsnorm, rope, softmax  # noqa: E402

BF16 = ml_dtypes.bfloat16
F32 = np.float32
I32 = np.int32
U32 = np.uint32


def _dt(d) -> str:
    return {BF16: "bf16", F32: "f32", I32: "i32", U32: "u32"}[d]


def log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    s = x - m
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def softmax_axis(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def kv_write(cache, x, pos):
    cache[:, pos] = x
    return cache


def rope_interleaved(x, c, s):
    """RoPE on interleaved pairs (GPT-J / Meta Llama style): x (S, H, D), c / s (S, H or 1, D/2)."""
    a, b = x[..., ::2], x[..., 1::2]
    return np.stack([a * c - b * s, a * s + b * c], -1).reshape(x.shape)


def moe_route(x, w_router, b_router):
    """gpt-oss routing: top-4 of the raw logits, then softmax over the picked four."""
    lv, li = nk.topk(x @ w_router + b_router, 4)
    return softmax(lv.astype(F32)), li


def moe_dense_gate(li, n_exp=32):
    """The 'dense' MoE variant's one-hot gate: (idx[..., None] == arange(E)), summed."""
    return (li[..., None] == np.arange(n_exp)).astype(F32).sum(axis=1)


# (name, function, [(shape, dtype), ...]) - the programs users write, at model sizes
CASES = [
    # elementwise chains with broadcasting
    (
        "x * w + b (row vectors)",
        lambda x, w, b: x * w + b,
        [((2048, 4096), F32), ((4096,), F32), ((4096,), F32)],
    ),
    ("x * c + 1.0 (column vector)", lambda x, c: x * c + 1.0, [((2048, 4096), F32), ((2048, 1), F32)]),
    ("x * 0.5 + 1.0 bf16", lambda x: x * 0.5 + 1.0, [((2048, 4096), BF16)]),
    ("bf16 + f32 mix", lambda x, y: x + y, [((2048, 4096), BF16), ((2048, 4096), F32)]),
    ("outer: col + row", lambda c, r: c + r, [((2048, 1), F32), ((1, 4096), F32)]),
    ("where(x > 0, x, 0.01 x)", lambda x: np.where(x > 0, x, 0.01 * x), [((2048, 4096), F32)]),
    ("clip(x, -1, 1)", lambda x: np.clip(x, -1.0, 1.0), [((2048, 4096), F32)]),
    ("x < y (compare)", lambda x, y: x < y, [((2048, 4096), F32), ((2048, 4096), F32)]),
    ("int32 (i * 3 + 7) & 255", lambda i: (i * 3 + 7) & 255, [((2048, 4096), I32)]),
    ("clamped swiglu gpt-oss", clamped_swiglu, [((8, 1440), BF16), ((8, 1440), BF16)]),
    ("3-D (B,S,D) * (D,) bf16", lambda x, w: x * w, [((1, 2048, 4096), BF16), ((4096,), BF16)]),
    # reductions
    ("x.sum(-1)", lambda x: x.sum(-1), [((2048, 4096), F32)]),
    ("x.sum(0)", lambda x: x.sum(0), [((2048, 4096), F32)]),
    ("x.max(0, keepdims)", lambda x: x.max(0, keepdims=True), [((2048, 4096), F32)]),
    ("x.mean(-1, keepdims)", lambda x: x.mean(-1, keepdims=True), [((2048, 4096), F32)]),
    ("x.var(-1)", lambda x: x.var(-1), [((2048, 4096), F32)]),
    ("x.var(0)", lambda x: x.var(0), [((2048, 4096), F32)]),
    ("x.sum(1) 3-D middle", lambda x: x.sum(1), [((16, 512, 256), F32)]),
    ("x.sum((0, 2)) 3-D", lambda x: x.sum((0, 2)), [((16, 512, 256), F32)]),
    ("x.max() all bf16", lambda x: x.max(), [((2048, 4096), BF16)]),
    ("int32 x.sum(-1)", lambda x: x.sum(-1), [((2048, 4096), I32)]),
    # softmax family
    ("softmax last", softmax, [((2048, 4096), F32)]),
    ("softmax axis 0", lambda x: softmax_axis(x, 0), [((2048, 4096), F32)]),
    ("softmax axis 1 of 3-D", lambda x: softmax_axis(x, 1), [((16, 512, 256), F32)]),
    ("log_softmax last", log_softmax, [((2048, 4096), F32)]),
    ("log_softmax vocab 8 rows", log_softmax, [((8, 151936), F32)]),
    (
        "softmax (1,16,128,128) bf16",
        lambda x: softmax(x.astype(F32)).astype(BF16),
        [((1, 16, 128, 128), BF16)],
    ),
    # movement
    ("x.T.copy()", lambda x: x.T.copy(), [((2048, 4096), F32)]),
    ("x.T.copy() bf16", lambda x: x.T.copy(), [((2048, 4096), BF16)]),
    (
        "heads split (S,H,D)->(H,S,D)",
        lambda x: x.reshape(2048, 32, 128).transpose(1, 0, 2).copy(),
        [((2048, 4096), BF16)],
    ),
    (
        "concatenate axis 0",
        lambda a, b: np.concatenate([a, b], 0),
        [((1024, 4096), F32), ((1024, 4096), F32)],
    ),
    (
        "concatenate axis -1",
        lambda a, b: np.concatenate([a, b], -1),
        [((2048, 2048), F32), ((2048, 2048), F32)],
    ),
    ("split 3 ways + sum", lambda x: sum(np.split(x, 4, axis=-1)), [((2048, 4096), F32)]),
    ("x[::2] row step", lambda x: x[::2].copy(), [((2048, 4096), F32)]),
    ("x[:, ::2] column step", lambda x: x[:, ::2].copy(), [((2048, 4096), F32)]),
    ("x[:, ::2] + x[:, 1::2]", lambda x: x[:, ::2] + x[:, 1::2], [((2048, 4096), F32)]),
    ("x[:, 1:-1] interior", lambda x: x[:, 1:-1] * 2.0, [((2048, 4096), F32)]),
    ("np.flip last axis", lambda x: np.flip(x, -1).copy(), [((64, 4096), F32)]),
    ("np.repeat axis 0 (GQA)", lambda k: np.repeat(k, 4, axis=0).copy(), [((8, 2048, 128), BF16)]),
    # selection / indexing
    ("argmax(-1) vocab", lambda x: np.argmax(x, -1), [((8, 151936), BF16)]),
    ("argmax(0)", lambda x: np.argmax(x, 0), [((2048, 4096), F32)]),
    ("topk k=8 router", lambda x: nk.topk(x, 8), [((128, 128), F32)]),
    ("topk k=1 vocab", lambda x: nk.topk(x, 1), [((4, 151936), F32)]),
    ("cumsum(-1)", lambda x: np.cumsum(x, -1), [((8, 2048), F32)]),
    ("cumsum(0)", lambda x: np.cumsum(x, 0), [((2048, 64), F32)]),
    ("cumsum vocab (top-p)", lambda x: np.cumsum(x, -1), [((1, 151936), F32)]),
    (
        "embedding take(table, ids)",
        lambda t, i: np.take(t, i, axis=0),
        [((151936, 2048), BF16), ((128,), I32)],
    ),
    ("take axis 1 (traced idx)", lambda x, i: np.take(x, i, axis=1), [((128, 4096), F32), ((64,), I32)]),
    ("take_along_axis", lambda x, i: np.take_along_axis(x, i, 1), [((128, 4096), F32), ((128, 8), I32)]),
    (
        "KV cache write cache[:, pos] = x",
        kv_write,
        [((1, 4096, 1, 128), BF16), ((1, 1, 1, 128), BF16), ((1,), I32)],
    ),
    (
        "where mask + -inf softmax",
        lambda s, m: softmax(np.where(m > 0, s, -np.inf)),
        [((2048, 2048), F32), ((2048, 2048), F32)],
    ),
    # model pieces
    (
        "RoPE interleaved (2048,32,128)",
        rope_interleaved,
        [((2048, 32, 128), BF16), ((2048, 1, 64), F32), ((2048, 1, 64), F32)],
    ),
    (
        "RoPE (1,2048,16,128) q / (…,8,…) k",
        rope,
        [((1, 2048, 16, 128), BF16), ((1, 2048, 8, 128), BF16), ((2048, 64), F32), ((2048, 64), F32)],
    ),
    ("rmsnorm (1,2048,4096) bf16", rmsnorm, [((1, 2048, 4096), BF16), ((4096,), BF16)]),
    ("MoE routing gpt-oss 8 tokens", moe_route, [((8, 2880), BF16), ((2880, 32), BF16), ((32,), BF16)]),
    ("MoE one-hot gate (8,4)->(8,32)", moe_dense_gate, [((8, 4), I32)]),
    # matmuls
    ("a @ b f32 1024^3", lambda a, b: a @ b, [((1024, 1024), F32), ((1024, 1024), F32)]),
    ("a.T @ b bf16", lambda a, b: a.T @ b, [((4096, 1024), BF16), ((4096, 1024), BF16)]),
    ("a @ b.T bf16", lambda a, b: a @ b.T, [((1024, 4096), BF16), ((1024, 4096), BF16)]),
    ("a.T @ b.T bf16", lambda a, b: a.T @ b.T, [((4096, 1024), BF16), ((1024, 4096), BF16)]),
    (
        "batched (16,512,128)@(16,128,512)",
        lambda a, b: a @ b,
        [((16, 512, 128), BF16), ((16, 128, 512), BF16)],
    ),
    (
        "batched a @ b.transpose(0,2,1)",
        lambda a, b: a @ b.transpose(0, 2, 1),
        [((16, 512, 128), BF16), ((16, 512, 128), BF16)],
    ),
    (
        "batched probs @ v (16,512,512)@(16,512,128)",
        lambda p, v: p @ v,
        [((16, 512, 512), BF16), ((16, 512, 128), BF16)],
    ),
    (
        "batched scores 32x1024x128 @ k.T",
        lambda a, b: a @ b.transpose(0, 2, 1),
        [((32, 1024, 128), BF16), ((32, 1024, 128), BF16)],
    ),
    ("GEMV (1,4096)@(4096,4096) bf16", lambda a, b: a @ b, [((1, 4096), BF16), ((4096, 4096), BF16)]),
    ("lm head (8,4096)@(4096,151936)", lambda a, b: a @ b, [((8, 4096), BF16), ((4096, 151936), BF16)]),
    ("f32 @ bf16 mix", lambda a, b: a @ b, [((1024, 1024), F32), ((1024, 1024), BF16)]),
    (
        "x @ w + bias",
        lambda x, w, b: x @ w + b,
        [((2048, 1024), BF16), ((1024, 4096), BF16), ((4096,), BF16)],
    ),
]


def compile_case(fn, specs):
    """The compiled Kernel of ``fn`` traced with ``(shape, dtype)`` example arguments."""
    args = [
        nk.TensorType(s, nk.get_dtype(np.dtype(d).name if d is not BF16 else "bfloat16")) for s, d in specs
    ]
    return nk.compile(nk.trace(fn).trace(*args))


def measure(name, fn, specs):
    """(ratio, table row, warnings) for one case; a case that fails sorts first with ratio inf."""
    shapes = " ".join("x".join(map(str, s)) or "()" for s, _ in specs)
    dts = "/".join(dict.fromkeys(_dt(d) for _, d in specs))
    t = time.perf_counter()
    try:
        k = compile_case(fn, specs)
        e, s = k.estimate(), k.stats()
        ws = k.warnings()
    except Exception as exc:  # report, do not stop the table
        msg = str(exc).splitlines()[0][:90] if str(exc) else type(exc).__name__
        return float("inf"), f"| {name} | {shapes} | {dts} | fails: {msg} | | | | | | |", []
    secs = time.perf_counter() - t
    line = (
        f"| {name} | {shapes} | {dts} | {e.scheduled_ns * 1e-3:,.1f} | {e.roofline_ns * 1e-3:,.1f} | "
        f"{e.ratio:.2f} | {s.hbm_traffic_ratio:.2f} | "
        f"{s.instructions_dynamic:,} | {len(ws)} | {secs:.1f} |"
    )
    return e.ratio, line, ws


HEADER = (
    "| program | shapes | dtype | scheduled us | roofline us | scheduled / roofline |"
    " traffic / min | executed instr | warnings | compile s |"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="only programs whose name contains this")
    ap.add_argument("--markdown", help="also write the sorted table to this file")
    ap.add_argument("--warnings", action="store_true", help="print each kernel's warnings")
    args = ap.parse_args()
    results = []
    for name, fn, specs in CASES:
        if args.only and args.only not in name:
            continue
        ratio, line, ws = measure(name, fn, specs)
        print(line, file=sys.stderr, flush=True)
        results.append((ratio, line, ws))
    results.sort(key=lambda r: -r[0])
    rows = [HEADER, "|" + "---|" * 10] + [line for _, line, _ in results]
    print("\n".join(rows))
    if args.warnings:
        for _, line, ws in results:
            if ws:
                print(line.split("|")[1].strip())
                for w in ws:
                    print(f"    {w}")
    if args.markdown:
        Path(args.markdown).write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
