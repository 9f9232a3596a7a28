"""Benchmark the issue 13 decode workloads at full size: the token embedding gather, the
Qwen3-0.6B decode step, greedy sampling over the Qwen3 vocabulary, and gpt-oss attention with
sink logits.

Per workload: compile time (best of 3), HBM traffic against the minimum (for the decode step,
the minimum its docstring defines: weights once, the cache rows attention reads, one row
written per cache, activations; otherwise every input and output once, gathered tables
counting only their rows), executed NKI instructions, the trn2 cost model's scheduled
estimate and roofline, and the largest error of the NKI interpreter's result against the
workload's independent float64 reference (absolute, and relative to max|reference|). Run:

    uv run python benchmarks/decode.py [--markdown FILE]

Times are wall-clock on this machine; tests never assert them.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nkigen_lite as nk
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.qwen3_decode import decode_min_hbm_bytes

CASES = [
    ("embedding", {}),
    ("qwen3_decode", {}),
    ("greedy_sampling", {"rows": 1}),
    ("greedy_sampling", {"rows": 8}),
    ("gptoss_sink_attention", {"seq": 256}),
    ("gptoss_sink_attention_sliding", {"seq": 256}),
]


def _compile(g):
    best, k = float("inf"), None
    for _ in range(3):
        t = time.perf_counter()
        k = nk.compile(g)
        best = min(best, time.perf_counter() - t)
    return best, k


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()
    rows = [
        "| workload | options | compile ms | HBM MiB | min MiB | traffic / min | executed instr "
        "| scheduled us | roofline us | max abs err | max rel err |",
        "|" + "---|" * 11,
    ]
    print("\n".join(rows), flush=True)
    for name, opts in CASES:
        w = get_workload(name)
        g = w.graph(**opts)
        t_compile, k = _compile(g)
        s, e = k.stats(), k.estimate()
        minimum = decode_min_hbm_bytes(g) if name == "qwen3_decode" else s.min_hbm_bytes
        ins = w.inputs(g, seed=0)
        got = k.run(ins)
        ref = w.reference(**ins)
        abs_err = max(float(np.max(np.abs(got[o].astype(np.float64) - r))) for o, r in ref.items())
        rel_err = max(
            float(np.max(np.abs(got[o].astype(np.float64) - r)) / max(np.max(np.abs(r)), 1e-30))
            for o, r in ref.items()
        )
        shown = ",".join(f"{k_}={v}" for k_, v in {**w.defaults, **opts}.items())
        rows.append(
            f"| {name} | {shown} | {t_compile * 1e3:.1f} | {s.hbm_bytes / 2**20:.2f} | "
            f"{minimum / 2**20:.2f} | {s.hbm_bytes / minimum:.3f} | {s.instructions_dynamic} | "
            f"{e.scheduled_ns * 1e-3:,.1f} | {e.roofline_ns * 1e-3:,.1f} | {abs_err:.2e} | {rel_err:.2e} |"
        )
        print(rows[-1], flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
