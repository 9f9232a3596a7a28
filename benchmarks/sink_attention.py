"""Benchmark gpt-oss attention with sink logits at real sizes: 64 query / 8 KV heads, head dim
64, bf16, causal and sliding window 128, at 256-4096 keys (gpt-oss's context is 4096).

Per case: compile time (once), HBM traffic against the minimum (every input and output once),
executed NKI instructions, the trn2 cost model's scheduled estimate and its roofline (the
executed matmuls' FLOPs, masks included, against the minimum bytes), and two rooflines of the
attention itself: the *graph* roofline (the graph as written: every score of the dense
``q @ kᵀ`` and ``p @ v`` products at the bf16 peak, or the minimum bytes) and the *visible*
roofline (only the query-key pairs the masks keep). Numerics are checked by the tests
(tests/lower/test_sink_attention*.py), not here. Run:

    uv run python benchmarks/sink_attention.py [--only SUBSTR] [--markdown FILE]

Times are wall-clock on this machine; tests never assert them.
"""

from __future__ import annotations

import argparse
import time

import nkigen_lite as nk
from nkigen_lite.nki.target import TRN2
from nkigen_lite.workloads.sink_attention import build_sink_attention

HEADS, KV_HEADS, HEAD_DIM = 64, 8, 64
CASES = [
    (256, None),
    (256, 128),
    (1024, None),
    (1024, 128),
    (2048, None),
    (2048, 128),
    (4096, None),
    (4096, 128),
]


def _rooflines(seq: int, window, min_bytes: int) -> tuple[float, float]:
    """(graph, visible) roofline in ns: matmul FLOPs at the bf16 peak or the minimum bytes."""
    peak = dict(TRN2.matmul_peak_flops)["bf16"]
    memory = min_bytes / TRN2.hbm_bytes_per_s * 1e9
    per_pair = 2 * 2 * HEAD_DIM * HEADS  # q kᵀ and p v, per (query, key) pair, all heads
    visible = sum(min(i + 1, window or seq) for i in range(seq))
    return max(per_pair * seq * seq / peak * 1e9, memory), max(per_pair * visible / peak * 1e9, memory)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="run the cases whose label contains this")
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()
    rows = [
        "| case | compile s | traffic / min | executed instr | scheduled us | model roofline us "
        "| graph roofline us | visible roofline us | scheduled / graph | scheduled / visible |",
        "|" + "---|" * 10,
    ]
    print("\n".join(rows), flush=True)
    for seq, window in CASES:
        label = f"seq {seq} " + ("causal" if window is None else f"window {window}")
        if args.only and args.only not in label:
            continue
        g = build_sink_attention(seq, HEADS, KV_HEADS, HEAD_DIM, window=window)
        t = time.perf_counter()
        k = nk.compile(g)
        compile_s = time.perf_counter() - t
        s, e = k.stats(), k.estimate()
        graph, visible = _rooflines(seq, window, s.min_hbm_bytes)
        us = 1e-3
        rows.append(
            f"| {label} | {compile_s:.1f} | {s.hbm_bytes / s.min_hbm_bytes:.2f} | {s.instructions_dynamic} | "
            f"{e.scheduled_ns * us:,.1f} | {e.roofline_ns * us:,.1f} | {graph * us:,.1f} | "
            f"{visible * us:,.1f} | {e.scheduled_ns / graph:.2f} | {e.scheduled_ns / visible:.2f} |"
        )
        print(rows[-1], flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
