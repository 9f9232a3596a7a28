"""Hand-written NKI kernels that use every NKI op and access form (strided and broadcast windows,
transposed and broadcast HBM views, loops with offsets), emitted and run on the simulator, must
match the NKI interpreter exactly (same fp32 programs; exceptions stated per test)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import emit_nki_source, simulate
from nkigen_lite.nki import ds

RNG = np.random.default_rng(7)


def _both(g, inputs):
    nk.nki.verify(g)
    want = nk.nki.run(g, inputs)
    got = simulate(emit_nki_source(g), inputs)
    assert list(got) == list(want)
    return got, want


def _exact(g, inputs):
    got, want = _both(g, inputs)
    for n in want:
        np.testing.assert_array_equal(got[n], want[n], err_msg=n)
    return got


def test_views_strided_windows_and_broadcast_reads():
    b = nk.nki.Builder("views")
    x = b.add_input("x", (64, 96), nk.float32)
    w = b.add_input("w", (96,), nk.float32)
    y = b.alloc((96, 64), nk.float32, "hbm", name="y")  # written through a transposed view
    z = b.alloc((32, 48), nk.float32, "hbm", name="z")
    xt = b.hbm_view(x, (96, 64), (1, 96), name="xt")  # transpose
    wb = b.hbm_view(w, (64, 96), (0, 1), name="wb")  # broadcast rows
    yt = b.hbm_view(y, (64, 96), (1, 64), name="yt")
    flat = b.hbm_view(z, (1536,), (1,), name="flat")  # a reshape
    t, u = b.alloc((64, 96), name="t"), b.alloc((64, 96), name="u")
    b.dma_copy(dst=t, src=x)
    b.dma_copy(dst=u, src=wb)
    b.tensor_tensor(dst=t, data1=t, data2=u, op="multiply")
    b.dma_copy(dst=yt, src=t)
    s = b.alloc((32, 48), name="s")
    b.dma_copy(dst=s, src=x[0:64:2, 0:96:2])  # strided HBM window
    col = b.alloc((32, 1), name="col")
    b.dma_copy(dst=col, src=xt[0:1, 0:64:2])
    b.tensor_tensor(dst=s, data1=s, data2=col[0:32, ds(0, 48, 0)], op="add")  # stride-0 tile read
    b.dma_copy(dst=flat[ds(0, 1536)], src=s)
    for v in (t, u, s, col):
        b.dealloc(v)
    b.set_outputs({"y": y, "z": z})
    xv = RNG.standard_normal((64, 96)).astype(np.float32)
    wv = RNG.standard_normal(96).astype(np.float32)
    got = _exact(b.graph, {"x": xv, "w": wv})
    np.testing.assert_array_equal(got["y"], (xv * wv).T)
    np.testing.assert_array_equal(got["z"], xv[::2, ::2] + xv[::2, :1])
    src = emit_nki_source(b.graph)
    assert "flat = z.reshape((1536,))" in src
    assert "x.ap(pattern=[[1, 1], [192, 32]], offset=0)" in src  # xt[0:1, 0:64:2]


def test_loops_iota_affine_select_and_vector_transpose():
    b = nk.nki.Builder("masks")
    x = b.add_input("x", (256, 32), nk.float32)
    y = b.alloc((256, 32), nk.float32, "hbm", name="y")
    idx = b.alloc((256, 32), nk.int32, "hbm", name="idx")
    tr = b.alloc((32, 256), nk.float32, "hbm", name="tr")
    with b.fori_loop(0, 2) as i:
        t = b.alloc((128, 32), name="t")
        b.dma_copy(dst=t, src=x[ds(i * 128, 128), 0:32])
        m = b.alloc((128, 32), name="m")
        b.affine_select(
            dst=m,
            pattern=[[-1, 32]],
            channel_multiplier=1,
            on_true_tile=t,
            on_false_value=-1e4,
            cmp_op="greater_equal",
            offset=i * 128,
        )
        b.dma_copy(dst=y[ds(i * 128, 128), 0:32], src=m)
        io = b.alloc((128, 32), nk.int32, name="io")
        b.iota(dst=io, pattern=[[1, 32]], offset=i * 4096, channel_multiplier=32)
        b.dma_copy(dst=idx[ds(i * 128, 128), 0:32], src=io)
        with b.fori_loop(0, 4) as j:
            blk = b.alloc((32, 32), name="blk")
            b.nc_transpose(dst=blk, data=t[ds(j * 32, 32), 0:32], engine="vector")
            b.dma_copy(dst=tr[0:32, ds(i * 128 + j * 32, 32)], src=blk)
            b.dealloc(blk)
        for v in (t, m, io):
            b.dealloc(v)
    b.set_outputs({"y": y, "idx": idx, "tr": tr})
    xv = RNG.standard_normal((256, 32)).astype(np.float32)
    got = _exact(b.graph, {"x": xv})
    rows, cols = np.indices((256, 32))
    np.testing.assert_array_equal(got["y"], np.where(rows - cols >= 0, xv, np.float32(-1e4)))
    np.testing.assert_array_equal(got["idx"], rows * 32 + cols)
    np.testing.assert_array_equal(got["tr"], xv.T)


def test_alu_forms_select_reduce_and_memset():
    b = nk.nki.Builder("alu")
    x = b.add_input("x", (128, 64), nk.float32)
    n = b.add_input("n", (128, 64), nk.int32)
    out = {
        k: b.alloc(s, dt, "hbm", name=k)
        for k, s, dt in (
            ("ts", (128, 64), nk.float32),
            ("bits", (128, 64), nk.int32),
            ("sel", (128, 64), nk.float32),
            ("red", (128, 1), nk.float32),
            ("act", (128, 64), nk.bfloat16),
            ("gp", (128, 64), nk.int32),
        )
    }
    t, ti = b.alloc((128, 64), name="t"), b.alloc((128, 64), nk.int32, name="ti")
    b.dma_copy(dst=t, src=x)
    b.dma_copy(dst=ti, src=n)
    col = b.alloc((128, 1), name="col")
    b.memset(dst=col, value=0.5)
    r = b.alloc((128, 64), name="r")
    b.tensor_scalar(
        dst=r, data=t, op0="subtract", operand0=col, reverse0=True, op1="maximum", operand1=-0.25
    )  # max(0.5 - x, -0.25)
    b.dma_copy(dst=out["ts"], src=r)
    ri = b.alloc((128, 64), nk.int32, name="ri")
    b.tensor_scalar(dst=ri, data=ti, op0="bitwise_and", operand0=6, op1="left_shift", operand1=1)
    b.dma_copy(dst=out["bits"], src=ri)
    pred = b.alloc((128, 64), nk.uint8, name="pred")
    b.tensor_scalar(dst=pred, data=t, op0="greater", operand0=0.0)
    b.select(dst=r, predicate=pred, on_true=t, on_false=-3.0)
    b.dma_copy(dst=out["sel"], src=r)
    red = b.alloc((128, 1), name="red")
    b.tensor_reduce(dst=red, op="maximum", data=t, axis=1, negate=True, keepdims=True)
    b.dma_copy(dst=out["red"], src=red)
    a16 = b.alloc((128, 64), nk.bfloat16, name="a16")
    b.activation(dst=a16, op="gelu_apprx_sigmoid", data=t, bias=col, scale=2.0)
    b.dma_copy(dst=out["act"], src=a16)
    g = b.alloc((128, 64), nk.int32, name="g")
    b.tensor_tensor(dst=g, data1=ti, data2=ti, op="multiply", engine="gpsimd")
    b.dma_copy(dst=out["gp"], src=g)
    for v in (t, ti, col, r, ri, pred, red, a16, g):
        b.dealloc(v)
    b.set_outputs(out)
    xv = RNG.standard_normal((128, 64)).astype(np.float32)
    nv = RNG.integers(-5000, 5000, (128, 64)).astype(np.int32)
    got, want = _both(b.graph, {"x": xv, "n": nv})
    for k in ("ts", "bits", "sel", "red", "gp"):
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    # activation functions: the simulator evaluates in float64, the interpreter in float32, and
    # both round to bf16 here: at most one bf16 ulp apart
    ulp = np.spacing(np.abs(want["act"].astype(np.float32)).astype(np.float32)) * 2**16
    assert np.all(np.abs(got["act"].astype(np.float32) - want["act"].astype(np.float32)) <= ulp)
    np.testing.assert_array_equal(got["ts"], np.maximum(0.5 - xv, -0.25))
    np.testing.assert_array_equal(got["bits"], (nv & 6) << 1)
    np.testing.assert_array_equal(got["sel"], np.where(xv > 0, xv, np.float32(-3.0)))
    np.testing.assert_array_equal(got["gp"], nv * nv)


@pytest.mark.parametrize("k", [128, 384])
def test_matmul_k_accumulation(k):
    """The first K block overwrites PSUM, the others accumulate in a sequential loop."""
    b = nk.nki.Builder("mm")
    a = b.add_input("a", (k, 128), nk.float32)  # stationary [K, M]
    w = b.add_input("w", (k, 512), nk.float32)
    y = b.alloc((128, 512), nk.float32, "hbm", name="y")
    acc = b.alloc((128, 512), nk.float32, "psum", name="acc")

    def block(i, accumulate):
        ta, tw = b.alloc((128, 128), name="ta"), b.alloc((128, 512), name="tw")
        b.dma_copy(dst=ta, src=a[ds(i * 128, 128), 0:128])
        b.dma_copy(dst=tw, src=w[ds(i * 128, 128), 0:512])
        b.nc_matmul(dst=acc, stationary=ta, moving=tw, accumulate=accumulate)
        b.dealloc(ta)
        b.dealloc(tw)

    block(0, False)
    if k > 128:
        with b.fori_loop(1, k // 128) as i:
            block(i, True)
    c = b.alloc((128, 512), name="c")
    b.tensor_copy(dst=c, src=acc)
    b.dma_copy(dst=y, src=c)
    b.dealloc(acc)
    b.dealloc(c)
    b.set_outputs({"y": y})
    av = RNG.standard_normal((k, 128)).astype(np.float32)
    wv = RNG.standard_normal((k, 512)).astype(np.float32)
    got, want = _both(b.graph, {"a": av, "w": wv})
    # fp32 accumulation of K products of magnitude ~1: both within 1e-5 * sqrt(K)-ish of float64
    ref = av.T.astype(np.float64) @ wv
    np.testing.assert_allclose(got["y"], ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-4)
    assert ("in range(1, 3):  # sequential" in emit_nki_source(b.graph)) == (k == 384)
