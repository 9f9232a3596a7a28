"""HBM traffic of one model_targets.py graph per tensor and source op (perf/traffic.py): which
tensors cross HBM and how many bytes each moves. Run:

    uv run python benchmarks/traffic_breakdown.py "Qwen3-0.6B layer bf16 seq 512" [--limit N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model_targets import LONG_TARGETS, TARGETS  # noqa: E402

import nkigen_lite as nk  # noqa: E402
from nkigen_lite.perf.traffic import bytes_by_tensor, traffic_table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph", help="a model_targets.py graph name (or a unique substring)")
    ap.add_argument("--limit", type=int, default=40, help="rows of the per-source table")
    args = ap.parse_args()
    found = [(n, b) for n, b in TARGETS + LONG_TARGETS if args.graph in n]
    if len(found) != 1:
        sys.exit(f"{len(found)} graphs match {args.graph!r}: {[n for n, _ in found]}")
    name, build = found[0]
    k = nk.compile(build())
    s = k.stats()
    ratio = s.hbm_traffic_ratio
    print(f"{name}: HBM traffic {s.hbm_bytes:,} B = {ratio:.2f} x minimum ({s.min_hbm_bytes:,} B)")
    print(f"{'tensor':<12} {'read':>14} {'write':>14}")
    for t, d in sorted(bytes_by_tensor(k.nki).items(), key=lambda kv: -sum(kv[1].values())):
        print(f"{t:<12} {d['read']:>14,} {d['write']:>14,}")
    print()
    print(traffic_table(k.nki, args.limit))


if __name__ == "__main__":
    main()
