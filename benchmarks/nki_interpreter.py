"""Time the NKI interpreter on a hand-written 2048x4096 fp32 row softmax (128-row tiles).

uv run python benchmarks/nki_interpreter.py [--rows 2048] [--cols 4096] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki import ts


def softmax_kernel(rows: int, cols: int, dtype=nk.float32) -> nk.Graph:
    """Row softmax: per 128-row tile, max -> exp(x - max) with a fused row sum -> scale."""
    b = nk.nki.Builder("softmax")
    x = b.add_input("x", (rows, cols), dtype)
    y = b.alloc((rows, cols), dtype, "hbm", name="y")
    with b.fori_loop(0, rows // 128) as i:
        t = b.alloc((128, cols), dtype, "sbuf", name="x_t")
        mx = b.alloc((128, 1), nk.float32, "sbuf", name="neg_max")
        s = b.alloc((128, 1), nk.float32, "sbuf", name="sum")
        b.dma_copy(dst=t, src=x[ts(i, 128), :])
        b.tensor_reduce(dst=mx, op="maximum", data=t, axis=1, negate=True)
        b.activation(dst=t, op="exp", data=t, bias=mx, reduce_res=s)
        b.activation(dst=s, op="reciprocal", data=s)
        b.tensor_scalar(dst=t, data=t, op0="multiply", operand0=s)
        b.dma_copy(dst=y[ts(i, 128), :], src=t)
        for v in (t, mx, s):
            b.dealloc(v)
    b.set_outputs({"y": y})
    return b.graph


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    g = softmax_kernel(args.rows, args.cols)
    x = np.random.default_rng(0).standard_normal((args.rows, args.cols)).astype(np.float32)
    t0 = time.perf_counter()
    nk.nki.verify(g)
    t_verify = time.perf_counter() - t0
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        out = nk.nki.run(g, {"x": x}, verify=False)["y"]
        times.append(time.perf_counter() - t0)
    ref = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    err = float(np.abs(out - ref).max())
    print(
        f"softmax {args.rows}x{args.cols} f32: verify {t_verify * 1e3:.1f} ms, run best "
        f"{min(times) * 1e3:.1f} ms / median {sorted(times)[len(times) // 2] * 1e3:.1f} ms "
        f"over {args.repeat}; max abs error vs float64 {err:.2e}"
    )


if __name__ == "__main__":
    main()
