"""Where an engine idles in a kernel's schedule: the cost model's list schedule (perf/schedule.py)
of one issue-12 target, traced, with each engine's busy time and its idle gaps longer than a
threshold, each named by the instruction and source op that ended it. Run:

    uv run python benchmarks/engine_gaps.py [--only SUBSTRING] [--engine tensor] [--min-us 1.0]

``--only`` picks the rows of benchmarks/model_targets.py (default: the Qwen3-0.6B layer at seq
512). Loops are traced over the iterations the scheduler runs (the rest are extrapolated), so a
gap inside a long loop is shown once per scheduled iteration. Figures come from the cost model
(docs/costmodel.md), never from wall-clock time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from model_targets import TARGETS  # noqa: E402

import nkigen_lite as nk  # noqa: E402
from nkigen_lite.perf.costmodel import per_core_target  # noqa: E402
from nkigen_lite.perf.schedule import Scheduler  # noqa: E402


def traced(kernel) -> Scheduler:
    """The kernel's list schedule with its trace of (instruction, start ns, end ns)."""
    g = kernel.nki
    sched = Scheduler(per_core_target(g, kernel.target), {}, trace=True)
    sched.run(g.body)
    return sched


def gaps(sched: Scheduler, engine: str, min_ns: float) -> list[tuple[float, float, object]]:
    """(start, end, the instruction after it) of ``engine``'s idle times of at least ``min_ns``."""
    runs = sorted(
        ((a, b, op) for op, a, b in sched.trace if sched._op_info(op).engine == engine), key=lambda r: r[0]
    )
    out, last = [], 0.0
    for a, b, op in runs:
        if a - last >= min_ns:
            out.append((last, a, op))
        last = max(last, b)
    return out


def report(name: str, engine: str, min_us: float) -> list[str]:
    kernel = nk.compile(dict(TARGETS)[name]())
    sched = traced(kernel)
    busy: dict[str, float] = {}
    for op, a, b in sched.trace:
        eng = sched._op_info(op).engine
        if eng != "dma":  # a DMA's traced span is its issue only
            busy[eng] = busy.get(eng, 0.0) + (b - a)
    lines = [f"{name}: scheduled {sched.makespan / 1000:,.1f} us"]
    lines.append("traced busy us: " + ", ".join(f"{e} {t / 1000:,.1f}" for e, t in sorted(busy.items())))
    found = gaps(sched, engine, min_us * 1000)
    idle = sum(b - a for a, b, _ in found)
    lines.append(f"{engine} idle gaps >= {min_us} us: {len(found)}, {idle / 1000:,.1f} us in all")
    for a, b, op in found:
        src = (op.loc or "").split(" at ")[0]
        lines.append(f"  {a / 1000:9.1f} - {b / 1000:9.1f} ({(b - a) / 1000:5.1f}) before {op.name} {src}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="Qwen3-0.6B layer bf16 seq 512")
    ap.add_argument("--engine", default="tensor")
    ap.add_argument("--min-us", type=float, default=1.0)
    args = ap.parse_args()
    for name, _ in TARGETS:
        if args.only in name:
            print("\n".join(report(name, args.engine, args.min_us)))


if __name__ == "__main__":
    main()
