"""Model-scale lowering (issue 11): for each graph, whether it compiles, its executed
instructions, HBM traffic against the minimum, compile time and (with ``--run``) the worst
relative error of Kernel.run against a float64 NumPy reference.

    uv run python benchmarks/model_scale.py            # compile only (seconds)
    uv run python benchmarks/model_scale.py --run      # also run (minutes: Qwen3 ~2 min)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nkigen_lite as nk  # noqa: E402
from nkigen_lite.ir.dtypes import bfloat16, float32  # noqa: E402
from nkigen_lite.tensor.builder import Builder  # noqa: E402
from nkigen_lite.workloads import get_workload  # noqa: E402
from tests.lower.test_lower_reduce_scale import (  # noqa: E402
    residual_rmsnorm,
    residual_rmsnorm_reference,
    softmax_graph,
    softmax_reference,
)


def _normal(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _rms(h, dt):
    def make():
        g = residual_rmsnorm(h, dt)
        ins = {
            n: _normal(v.type.shape, i).astype(dt.np_dtype)
            for i, (n, v) in enumerate(zip(g.input_names, g.inputs))
        }
        return g, ins, residual_rmsnorm_reference(ins["x"], ins["r"], ins["w"], dt)

    return make


def _softmax(rows, log):
    def make():
        g = softmax_graph((rows, 151_936), log)
        x = _normal((rows, 151_936)) * 4
        return g, {"x": x}, softmax_reference(x, log)

    return make


def _simple(name, shape, body, ref):
    def make():
        b = Builder(name)
        x = b.add_input("x", shape, float32)
        b.set_outputs(body(b, x))
        xv = _normal(shape)
        return b.graph, {"x": xv}, ref(xv.astype(np.float64))

    return make


def _chain():
    def body(_b, x):
        y = x
        for i in range(1000):
            y = y * 1.0001 if i % 2 == 0 else y + 0.5
        return {"y": y}

    def ref(x):
        for i in range(1000):
            x = x * 1.0001 if i % 2 == 0 else x + 0.5
        return {"y": x}

    return _simple("chain", (1024, 1024), body, ref)


def _qwen3():
    w = get_workload("qwen3_layer")
    g = w.graph()
    ins = w.inputs(g)
    return g, ins, None if not RUN else w.reference(**ins)


CASES = {
    **{
        f"residual+rmsnorm 1x128x{h} {dt.name}": _rms(h, dt)
        for dt in (bfloat16, float32)
        for h in (4096, 8192, 16384)
    },
    **{
        f"{'log_' if log else ''}softmax {r}x151936 f32": _softmax(r, log)
        for log in (False, True)
        for r in (4, 128)
    },
    "var+std 200x300": _simple(
        "var_std",
        (200, 300),
        lambda b, x: {"v": b.var(x), "s": b.std(x)},
        lambda x: {"v": np.var(x), "s": np.std(x)},
    ),
    "row max + column max 256x384": _simple(
        "row_col",
        (256, 384),
        lambda b, x: {"r": b.max(x, axis=1), "c": b.max(x, axis=0)},
        lambda x: {"r": x.max(1), "c": x.max(0)},
    ),
    "x.max(1).sum(0) 300x300": _simple(
        "max_sum",
        (300, 300),
        lambda b, x: {"y": b.sum(b.max(x, axis=1), axis=0)},
        lambda x: {"y": x.max(1).sum()},
    ),
    "1,000-op chain 1024x1024 f32": _chain(),
    "Qwen3-Embedding-8B layer seq 128 bf16": _qwen3,
}
RUN = False


def main() -> None:
    global RUN
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", action="store_true", help="also run Kernel.run against float64")
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    RUN = ap.parse_args().run
    only = ap.parse_args().k
    print("| graph | compiles | max rel. error | traffic / min | executed instr. | compile ms |")
    print("|---|---|---|---|---|---|")
    for name, make in CASES.items():
        if only not in name:
            continue
        g, ins, ref = make()
        t = time.perf_counter()
        try:
            k = nk.compile(g)
        except nk.BuildError as e:
            print(f"| {name} | no: {str(e)[:80]} | | | | |")
            continue
        ms = (time.perf_counter() - t) * 1000
        s = k.stats()
        err = ""
        if RUN and ref is not None:
            out = k.run(ins)
            err = max(
                float(np.abs(out[n].astype(np.float64) - r).max() / max(1.0, np.abs(r).max()))
                for n, r in ref.items()
            )
            err = f"{err:.1e}"
        print(f"| {name} | yes | {err} | {s.hbm_traffic_ratio:.3f} | {s.instructions_dynamic:,} | {ms:.0f} |")


if __name__ == "__main__":
    main()
