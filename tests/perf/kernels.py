"""Hand-written NKI kernels for the cost-model tests (built with nk.nki.Builder)."""

from __future__ import annotations

import nkigen_lite as nk
from nkigen_lite.nki import ds, ts


def tile_add(rows: int = 128, cols: int = 512, dtype=nk.float32) -> nk.Graph:
    """c = a + b in 128-row tiles: per tile two loads, one VectorE add, one store."""
    b = nk.nki.Builder("tile_add")
    a = b.add_input("a", (rows, cols), dtype)
    c = b.add_input("b", (rows, cols), dtype)
    y = b.alloc((rows, cols), dtype, "hbm", name="y")
    with b.fori_loop(0, rows // 128) as i:
        ta, tb = b.alloc((128, cols), dtype), b.alloc((128, cols), dtype)
        b.dma_copy(dst=ta, src=a[ts(i, 128), :])
        b.dma_copy(dst=tb, src=c[ts(i, 128), :])
        b.tensor_tensor(dst=ta, data1=ta, data2=tb, op="add")
        b.dma_copy(dst=y[ts(i, 128), :], src=ta)
        b.dealloc(ta)
        b.dealloc(tb)
    b.set_outputs({"y": y})
    return b.graph


def copy_through(partitions: int, cols: int, dtype=nk.float32) -> nk.Graph:
    """y = x through SBUF: one load and one store of a [partitions, cols] tile."""
    b = nk.nki.Builder("copy_through")
    x = b.add_input("x", (partitions, cols), dtype)
    y = b.alloc((partitions, cols), dtype, "hbm", name="y")
    t = b.alloc((partitions, cols), dtype)
    b.dma_copy(dst=t, src=x)
    b.dma_copy(dst=y, src=t)
    b.dealloc(t)
    b.set_outputs({"y": y})
    return b.graph


def gemm(m: int, k: int, n: int, dtype=nk.bfloat16) -> nk.Graph:
    """y = at.T @ b with SBUF blocking: both operands loaded once (at is A transposed, [K, M],
    so stationary tiles are [128 (K), 128 (M)]); per 128-row block of y, per 512 columns, one
    PSUM accumulation group of K/128 matmuls, then a VectorE copy out of PSUM; one store per
    row block."""
    b = nk.nki.Builder("gemm")
    at = b.add_input("at", (k, m), dtype)
    bm = b.add_input("b", (k, n), dtype)
    y = b.alloc((m, n), dtype, "hbm", name="y")
    kt = k // 128
    at_s, b_s = b.alloc((128, kt, m), dtype, name="at_s"), b.alloc((128, kt, n), dtype, name="b_s")
    b.dma_copy(dst=at_s, src=b.hbm_view(at, (128, kt, m), (m, 128 * m, 1)))
    b.dma_copy(dst=b_s, src=b.hbm_view(bm, (128, kt, n), (n, 128 * n, 1)))
    with b.fori_loop(0, m // 128) as i:
        out = b.alloc((128, n), dtype, name="out")
        with b.fori_loop(0, n // 512) as j:
            acc = b.alloc((128, 512), nk.float32, "psum", name="acc")
            b.nc_matmul(acc, at_s[:, 0:1, ts(i, 128)], b_s[:, 0:1, ts(j, 512)])
            if kt > 1:
                with b.fori_loop(1, kt) as kk:
                    b.nc_matmul(
                        acc, at_s[:, ds(kk, 1), ts(i, 128)], b_s[:, ds(kk, 1), ts(j, 512)], accumulate=True
                    )
            b.tensor_copy(dst=out[:, ts(j, 512)], src=acc)
            b.dealloc(acc)
        b.dma_copy(dst=y[ts(i, 128), :], src=out)
        b.dealloc(out)
    b.dealloc(at_s)
    b.dealloc(b_s)
    b.set_outputs({"y": y})
    return b.graph


def every_op() -> nk.Graph:
    """One kernel using every NKI compute instruction, DMA and collective (a 128 x 128 f32 tile
    pipeline; the collectives are of one rank)."""
    b = nk.nki.Builder("every_op")
    x = b.add_input("x", (128, 128), nk.float32)
    y = b.alloc((128, 128), nk.float32, "hbm", name="y")
    t, u = b.alloc((128, 128)), b.alloc((128, 128))
    col, idx = b.alloc((128, 1)), b.alloc((128, 128), nk.int32)
    pred, ps = b.alloc((128, 128), nk.uint8), b.alloc((128, 128), nk.float32, "psum")
    b.dma_copy(dst=t, src=x)
    b.memset(u, 0.0)
    b.iota(idx, [[1, 128]], channel_multiplier=128)
    b.tensor_copy(dst=u, src=idx, engine="gpsimd")
    b.tensor_tensor(dst=u, data1=t, data2=u, op="add")
    b.tensor_reduce(dst=col, op="add", data=u, axis=1)
    b.activation(dst=u, op="exp", data=t, bias=col)
    b.tensor_scalar(dst=pred, data=t, op0="greater", operand0=0.0)
    b.select(dst=u, predicate=pred, on_true=u, on_false=0.0)
    b.affine_select(
        dst=t,
        pattern=[[-1, 128]],
        channel_multiplier=1,
        on_true_tile=u,
        on_false_value=0.0,
        cmp_op="greater_equal",
    )
    b.nc_transpose(ps, t)
    b.tensor_copy(dst=u, src=ps)
    b.nc_matmul(ps, t, u)
    b.tensor_copy(dst=t, src=ps, engine="scalar")
    s = [b.alloc((128, 128), nk.float32, "hbm", name=f"s{i}") for i in range(5)]
    b.dma_copy(dst=s[0], src=t)
    b.all_reduce(s[1], s[0], world=1)  # collectives of one rank: copies
    b.all_gather(s[2], s[1], world=1)
    b.reduce_scatter(s[3], s[2], world=1)
    b.all_to_all(s[4], s[3], world=1)
    b.dma_copy(dst=y, src=s[4])
    rows = b.alloc((128, 1), nk.int32)
    b.iota(rows, [[0, 1]], channel_multiplier=1)
    b.dma_gather(dst=u, src=x, index=rows)
    b.dma_scatter(dst=y, src=u, index=rows)
    m8, p8 = b.alloc((128, 8)), b.alloc((128, 8), nk.uint32)
    b.max8(dst=m8, src=u)
    b.find_index8(dst=p8, data=u, vals=m8)
    b.match_replace8(dst=t, data=u, vals=m8, imm=0.0)
    b.tensor_tensor_scan(dst=t, data0=u, data1=u, initial=0.0)
    b.stream_shuffle(dst=t, src=u, mask=list(range(31, -1, -1)))
    st, mv = b.alloc((128, 6)), b.alloc((128, 2))
    b.bn_stats(dst=st, data=u)
    b.bn_aggr(dst=mv, data=st)
    r16, c16 = b.alloc((16, 128), nk.bfloat16), b.alloc((128, 16), nk.bfloat16)
    b.dma_copy(dst=r16, src=u[0:16, :])
    b.dma_transpose(dst=c16, src=r16)  # SBUF -> SBUF
    for v in (t, u, col, idx, pred, ps, rows, m8, p8, st, mv, r16, c16):
        b.dealloc(v)
    b.set_outputs({"y": y})
    return b.graph
