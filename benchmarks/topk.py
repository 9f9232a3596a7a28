"""topk before / after the native lowering (transforms/lower/topk.py): for each graph, the
decomposed path (k selection rounds over the whole row: forced here, as it was before) and the
native path (max8 / find_index8 / match_replace8 per chunk), with HBM bytes moved, traffic
against the minimum, executed instructions, the cost model's scheduled estimate and the compile
time. Run:

    uv run python benchmarks/topk.py [--markdown FILE]

Figures come from the cost model (docs/costmodel.md), never from wall-clock time; compile time
is printed for information.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nkigen_lite as nk  # noqa: E402
from nkigen_lite.nki.ops import TOP8_OPS  # noqa: E402
from nkigen_lite.transforms import capabilities  # noqa: E402
from nkigen_lite.transforms.decomposition import ordering  # noqa: E402

# (label, shape, dtype, k): vocabulary-sized rows, a MoE router, greedy sampling (k = 1, and
# b.argmax, which becomes topk(x, 1) when the native path takes it); k = 0 marks b.argmax
GRAPHS = [
    ("vocab 128x151936 f32 k=8", (128, 151936), nk.float32, 8),
    ("vocab 128x151936 bf16 k=8", (128, 151936), nk.bfloat16, 8),
    ("vocab 128x151936 bf16 k=16", (128, 151936), nk.bfloat16, 16),
    ("router 128x128 f32 k=8", (128, 128), nk.float32, 8),
    ("greedy 1x151936 f32 k=1", (1, 151936), nk.float32, 1),
    ("greedy argmax 1x151936 f32", (1, 151936), nk.float32, 0),
    ("argmax 8x151936 bf16", (8, 151936), nk.bfloat16, 0),
]


@contextmanager
def decomposed_only():
    """Make decompose expand every topk and argmax (the paths before the native lowering)."""
    saved = capabilities.native_topk_refusal, ordering.topk_refusal
    capabilities.native_topk_refusal = lambda *_: "forced: the decomposed path"
    ordering.topk_refusal = lambda *_: "forced: the decomposed path"
    try:
        yield
    finally:
        capabilities.native_topk_refusal, ordering.topk_refusal = saved


def _graph(shape, dtype, k):
    b = nk.Builder("topk")
    x = b.add_input("x", shape, dtype)
    if k == 0:
        b.set_outputs({"i": b.argmax(x, axis=-1)})
        return b.graph
    v, i = b.topk(x, k)
    b.set_outputs({"v": v, "i": i})
    return b.graph


def path(kern) -> str:
    """ "native" when the kernel uses the top-8 instructions (a native argmax has no max8, only
    find_index8 against the row's maximum), else "decomposed"."""
    return "native" if any(isinstance(op, TOP8_OPS) for op in kern.nki.walk()) else "decomposed"


def measure(shape, dtype, k) -> dict:
    t0 = time.perf_counter()
    kern = nk.compile(_graph(shape, dtype, k))
    compile_s = time.perf_counter() - t0
    s, e = kern.stats(), kern.estimate()
    return {
        "path": path(kern),
        "hbm_mb": s.dma_bytes / 1e6,
        "ratio": s.hbm_traffic_ratio,
        "instr": s.instructions_dynamic,
        "est_us": e.scheduled_ns / 1e3,
        "compile_s": compile_s,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args(argv)
    head = (
        "| graph | path | HBM MB | traffic / min | executed instr | estimate µs | compile s |\n"
        "|---|---|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for label, shape, dtype, k in GRAPHS:
        with decomposed_only():
            before = measure(shape, dtype, k)
        after = measure(shape, dtype, k)
        for m in (before, after):
            lines.append(
                f"| {label} | {m['path']} | {m['hbm_mb']:.2f} | {m['ratio']:.2f} | {m['instr']:,} | "
                f"{m['est_us']:,.1f} | {m['compile_s']:.2f} |"
            )
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
