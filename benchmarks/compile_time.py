"""Compile-time scaling: how ``nk.compile`` time grows with graph size.

Cases: an N-op elementwise chain over 1024x1024 f32 (N = 300, 1000, 3000), 256 independent
softmaxes in one graph, and a 1024x1024 f32 dense constant (compile time with and without it,
plus printing and parsing it). Prints one markdown table with the total compile time, time per
op and the slowest stages. Run:

    uv run python benchmarks/compile_time.py [--sizes 300 1000 3000] [--profile CASE]

``--profile CASE`` (e.g. ``chain3000``) runs cProfile on that case's compile and prints the top
functions by cumulative time. Times are wall-clock and process CPU time on this machine (best of
``--repeat``; CPU time is the steadier figure when other jobs share the cores); tests never
assert them.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import nkigen_lite as nk


def chain(n: int, shape=(1024, 1024)):
    """An n-op elementwise chain: tanh, add the input, scale by 0.5, repeated."""
    b = nk.Builder(f"chain{n}")
    x = b.add_input("x", shape, nk.float32)
    y = x
    for i in range(n):
        k = i % 3
        y = b.tanh(y) if k == 0 else (y + x if k == 1 else y * 0.5)
    b.set_outputs({"y": y})
    return b.graph


def softmaxes(n: int = 256, shape=(64, 128)):
    """n independent softmaxes (one input and one output each) in one graph."""
    b = nk.Builder(f"softmax{n}")
    outs = {}
    for i in range(n):
        x = b.add_input(f"x{i}", shape, nk.float32)
        e = b.exp(x - b.max(x, axis=-1, keepdims=True))
        outs[f"y{i}"] = e / b.sum(e, axis=-1, keepdims=True)
    b.set_outputs(outs)
    return b.graph


def with_constant(shape=(1024, 1024), const: bool = True):
    """x * 2 + c with c a dense constant (or a second input when ``const`` is False)."""
    b = nk.Builder("dense_const")
    x = b.add_input("x", shape, nk.float32)
    if const:
        c = b.constant(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    else:
        c = b.add_input("c", shape, nk.float32)
    b.set_outputs({"y": x * 2.0 + c})
    return b.graph


def n_ops(g) -> int:
    return sum(1 for op in g.walk() if op.name != "return")


def best_of(fn, n):
    """(best wall seconds, best CPU seconds, last result) over ``n`` runs."""
    wall = cpu = float("inf")
    out = None
    for _ in range(n):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall = min(wall, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
    return wall, cpu, out


def cases(sizes):
    out = [(f"chain{n}", lambda n=n: chain(n)) for n in sizes]
    out.append(("softmax256", softmaxes))
    out.append(("input1024x1024", lambda: with_constant(const=False)))
    out.append(("const1024x1024", with_constant))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[300, 1000, 3000])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", help="cProfile one case (e.g. chain3000) instead of the table")
    args = ap.parse_args()
    table = dict(cases(args.sizes))
    if args.profile:
        g = table[args.profile]()
        prof = cProfile.Profile()
        prof.enable()
        nk.compile(g)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        return
    print(
        "| case | tensor ops | compile s (wall) | compile s (CPU) | CPU ms / op | slowest stages (wall s) |"
    )
    print("|---|---|---|---|---|---|")
    for name, build in table.items():
        g = build()
        n = n_ops(g)
        t, c, k = best_of(lambda g=g: nk.compile(g), args.repeat)
        top = sorted(k.timings.items(), key=lambda kv: -kv[1])[:3]
        stages = ", ".join(f"{s} {v:.2f}" for s, v in top)
        print(f"| {name} | {n} | {t:.2f} | {c:.2f} | {c / n * 1e3:.3f} | {stages} |", flush=True)
    g = with_constant()
    text = str(g)
    _, c_print, _ = best_of(lambda: str(g), args.repeat)
    _, c_parse, _ = best_of(lambda: nk.parse(text), args.repeat)
    print(
        f"\n1024x1024 f32 dense constant: print {c_print:.3f} s, parse {c_parse:.3f} s CPU, "
        f"{len(text) / 2**20:.1f} MiB of text"
    )


if __name__ == "__main__":
    main()
