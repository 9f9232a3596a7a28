"""Benchmark the compiler on the workloads that matter (Qwen3 / gpt-oss shapes).

For every workload: tensor ops, NKI instructions (static / executed), DMA transfers and bytes,
HBM traffic against the minimum, peak SBUF/PSUM, the trn2 cost model (docs/costmodel.md): the
old estimate (the lower bound: engines overlapping perfectly), the scheduled estimate, the
roofline, scheduled / roofline and the critical resource; compile time, NKI-interpreter time,
and the error against an independent float64 NumPy reference. Run:

    uv run python benchmarks/workloads.py [--markdown FILE]

Times are wall-clock on this machine (best of 3); tests never assert them.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nkigen_lite as nk
from nkigen_lite.workloads import get_workload

CASES = [
    ("softmax", {"shape": (2048, 4096)}),
    ("softmax", {"shape": (1, 16, 128, 128)}),
    ("rmsnorm", {"shape": (2048, 4096)}),
    ("rmsnorm", {"shape": (1, 128, 1024), "dtype": nk.bfloat16}),
    ("layernorm", {"shape": (512, 1024)}),
    ("rope", {"batch": 1, "seq": 128, "heads": 16, "d": 128}),
    ("gelu_tanh", {"shape": (1024, 2048)}),
    ("clamped_swiglu", {"shape": (128, 1440)}),
    ("attention", {"seq": 128, "d": 128}),
    ("swiglu_mlp", {"tokens": 128, "hidden": 1024, "inter": 3072}),
    ("matmul", {"m": 128, "k": 1024, "n": 6144}),
    ("matmul", {"m": 256, "k": 384, "n": 1024}),
]


def best_of(fn, n=3):
    times = []
    out = None
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()
    header = (
        "| workload | shape | tensor ops | NKI instr static | executed | DMAs | DMA MiB "
        "| traffic / min | SBUF B/part | PSUM B/part | old estimate us (lower bound) "
        "| scheduled us | roofline us | scheduled / roofline | critical | compile ms "
        "| interp ms | rel err |"
    )
    rows = [header, "|" + "---|" * 18]
    print("\n".join(rows), flush=True)
    for name, opts in CASES:
        w = get_workload(name)
        g = w.graph(**opts)
        n_ops = sum(1 for op in g.walk() if op.name != "return")
        t_compile, k = best_of(lambda g=g: nk.compile(g))
        s = k.stats()
        e = k.estimate()
        inputs = w.inputs(g, seed=0)
        t_run, out = best_of(lambda k=k, inputs=inputs: k.run(inputs))
        ref = w.reference(**inputs)
        err = max(
            float(np.max(np.abs(out[o].astype(np.float64) - r)) / max(np.max(np.abs(r)), 1e-30))
            for o, r in ref.items()
        )
        shape = ",".join(f"{v}" for k_, v in opts.items() if k_ != "dtype")
        dt = opts.get("dtype", nk.float32)
        rows.append(
            f"| {name} ({dt}) | {shape} | {n_ops} | {s.instructions_static} | "
            f"{s.instructions_dynamic} | {s.dma_count} | {s.dma_bytes / 2**20:.2f} | "
            f"{s.hbm_traffic_ratio:.3f} | {s.peak_sbuf_bytes:,} | {s.peak_psum_bytes:,} | "
            f"{e.lower_bound_ns * 1e-3:,.2f} | {e.scheduled_ns * 1e-3:,.2f} | "
            f"{e.roofline_ns * 1e-3:,.2f} | {e.ratio:.2f} | {e.critical_engine} | "
            f"{t_compile * 1e3:.1f} | {t_run * 1e3:.1f} | {err:.1e} |"
        )
        print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
