"""Hand-written NKI kernels shared by the tests (built with nk.nki.Builder), and a check."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki import ts


def tiled_add(rows: int, cols: int, dtype=nk.float32) -> nk.Graph:
    """y = a + b in 128-row tiles: a loop over the full tiles, then the remainder tile."""
    b = nk.nki.Builder("tiled_add")
    a = b.add_input("a", (rows, cols), dtype)
    c = b.add_input("b", (rows, cols), dtype)
    y = b.alloc((rows, cols), dtype, "hbm", name="y")

    def tile(r0, p):
        ta, tb = b.alloc((128, cols), dtype, name="ta"), b.alloc((128, cols), dtype, name="tb")
        b.dma_copy(dst=ta[0:p, :], src=a[r0 : r0 + p, :])
        b.dma_copy(dst=tb[0:p, :], src=c[r0 : r0 + p, :])
        b.tensor_tensor(dst=ta[0:p, :], data1=ta[0:p, :], data2=tb[0:p, :], op="add")
        b.dma_copy(dst=y[r0 : r0 + p, :], src=ta[0:p, :])
        b.dealloc(ta)
        b.dealloc(tb)

    full, rem = divmod(rows, 128)
    if full:
        with b.fori_loop(0, full) as i:
            tile(i * 128, 128)
    if rem:
        tile(full * 128, rem)
    b.set_outputs({"y": y})
    return b.graph


def softmax(rows: int, cols: int, dtype=nk.float32) -> nk.Graph:
    """Row softmax: max (negated) -> exp(x - max) with fused row sum -> multiply by 1/sum."""
    b = nk.nki.Builder("softmax")
    x = b.add_input("x", (rows, cols), dtype)
    y = b.alloc((rows, cols), dtype, "hbm", name="y")

    def tile(r0, p):
        t = b.alloc((128, cols), dtype, name="x_t")
        e = b.alloc((128, cols), nk.float32, name="e")
        mx = b.alloc((128, 1), nk.float32, name="neg_max")
        s = b.alloc((128, 1), nk.float32, name="sum")
        b.dma_copy(dst=t[0:p, :], src=x[r0 : r0 + p, :])
        b.tensor_reduce(dst=mx[0:p, :], op="maximum", data=t[0:p, :], axis=1, negate=True)
        b.activation(dst=e[0:p, :], op="exp", data=t[0:p, :], bias=mx[0:p, :], reduce_res=s[0:p, :])
        b.activation(dst=s[0:p, :], op="reciprocal", data=s[0:p, :])
        b.tensor_scalar(dst=t[0:p, :], data=e[0:p, :], op0="multiply", operand0=s[0:p, :])
        b.dma_copy(dst=y[r0 : r0 + p, :], src=t[0:p, :])
        for v in (t, e, mx, s):
            b.dealloc(v)

    full, rem = divmod(rows, 128)
    if full:
        with b.fori_loop(0, full) as i:
            tile(i * 128, 128)
    if rem:
        tile(full * 128, rem)
    b.set_outputs({"y": y})
    return b.graph


def matmul(m: int, k: int, n: int, dtype=nk.float32) -> nk.Graph:
    """c = a @ b; a^T is read through a transposing HBM view; K accumulates in PSUM."""
    assert m % 128 == 0 and k % 128 == 0 and n % 512 == 0
    b = nk.nki.Builder("matmul")
    a = b.add_input("a", (m, k), dtype)
    w = b.add_input("b", (k, n), dtype)
    c = b.alloc((m, n), nk.float32, "hbm", name="c")
    a_t = b.hbm_view(a, (k, m), (1, k), name="a_t")
    with b.fori_loop(0, m // 128) as i:
        with b.fori_loop(0, n // 512) as j:
            acc = b.alloc((128, 512), nk.float32, "psum", name="acc")

            def step(kk, accumulate):
                st = b.alloc((128, 128), dtype, name="lhs_t")
                mv = b.alloc((128, 512), dtype, name="rhs")
                b.dma_copy(dst=st, src=a_t[ts(kk, 128), ts(i, 128)])
                b.dma_copy(dst=mv, src=w[ts(kk, 128), ts(j, 512)])
                b.nc_matmul(dst=acc, stationary=st, moving=mv, accumulate=accumulate)
                b.dealloc(st)
                b.dealloc(mv)

            step(0, False)
            if k > 128:
                with b.fori_loop(1, k // 128) as kk:
                    step(kk, True)
            out = b.alloc((128, 512), nk.float32, name="out")
            b.tensor_copy(dst=out, src=acc)
            b.dma_copy(dst=c[ts(i, 128), ts(j, 512)], src=out)
            b.dealloc(out)
            b.dealloc(acc)
    b.set_outputs({"c": c})
    return b.graph


def transpose(rows: int, cols: int, dtype=nk.float32) -> nk.Graph:
    """y = x.T through the Tensor engine, 128x128 blocks SBUF -> PSUM -> SBUF."""
    b = nk.nki.Builder("transpose")
    x = b.add_input("x", (rows, cols), dtype)
    y = b.alloc((cols, rows), dtype, "hbm", name="y")
    with b.fori_loop(0, rows // 128) as i:
        with b.fori_loop(0, cols // 128) as j:
            t = b.alloc((128, 128), dtype, name="blk")
            p = b.alloc((128, 128), dtype, "psum", name="blk_t")
            o = b.alloc((128, 128), dtype, name="out")
            b.dma_copy(dst=t, src=x[ts(i, 128), ts(j, 128)])
            b.nc_transpose(dst=p, data=t)
            b.tensor_copy(dst=o, src=p)
            b.dma_copy(dst=y[ts(j, 128), ts(i, 128)], src=o)
            for v in (t, p, o):
                b.dealloc(v)
    b.set_outputs({"y": y})
    return b.graph


def assert_dot_close(got, a, w):
    """fp32 dot products of length K: |error| <= K * 2**-24 * (|a| @ |w|) (the classic bound)."""
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    bound = a.shape[1] * 2.0**-24 * (np.abs(a64) @ np.abs(w64))
    err = np.abs(got - a64 @ w64)
    assert (err <= bound).all(), f"max error/bound {float((err / bound).max()):.3g}"
