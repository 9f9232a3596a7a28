"""Hand-written NKI programs run by the NKI interpreter equal independent float64 NumPy."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing.tolerance import assert_close

from . import kernels


def _rand(shape, dtype, seed=0, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype.np_dtype)


@pytest.mark.parametrize("dtype", [nk.float32, nk.bfloat16])
def test_tiled_add_with_remainder_tile(dtype):
    a, b = _rand((300, 512), dtype, 1), _rand((300, 512), dtype, 2)
    g = kernels.tiled_add(300, 512, dtype)
    out = nk.nki.run(g, {"a": a, "b": b})["y"]
    assert out.dtype == dtype.np_dtype
    # one fp32 add, rounded once to dtype: the default tolerance of dtype
    assert_close(out, a.astype(np.float64) + b.astype(np.float64), dtype)


@pytest.mark.parametrize(
    "rows,cols,dtype", [(256, 512, nk.float32), (300, 1000, nk.float32), (200, 384, nk.bfloat16)]
)
def test_row_softmax(rows, cols, dtype):
    x = _rand((rows, cols), dtype, 3, -4, 4)
    out = nk.nki.run(kernels.softmax(rows, cols, dtype), {"x": x})["y"]
    xd = x.astype(np.float64)
    ref = np.exp(xd - xd.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    assert_close(out, ref, dtype)


@pytest.mark.parametrize("dtype", [nk.float32, nk.bfloat16])
def test_matmul_256x384x1024_accumulates_k_in_psum(dtype):
    a, w = _rand((256, 384), dtype, 4), _rand((384, 1024), dtype, 5)
    out = nk.nki.run(kernels.matmul(256, 384, 1024, dtype), {"a": a, "b": w})["c"]
    assert out.dtype == np.float32
    # inputs are exact in fp32 and the result stays fp32 (PSUM accumulation): the error is
    # that of fp32 dot products of length 384; bf16 accumulation would break this bound
    kernels.assert_dot_close(out, a, w)


def test_transpose_through_tensor_engine_is_bit_exact():
    x = _rand((256, 384), nk.float32, 6)
    out = nk.nki.run(kernels.transpose(256, 384), {"x": x})["y"]
    np.testing.assert_array_equal(out, x.T)


def _sum_kernel(dtype_out, via):
    b = nk.nki.Builder("rowsum")
    x = b.add_input("x", (128, 8192), nk.bfloat16)
    y = b.alloc((128, 1), dtype_out, "hbm", name="y")
    t = b.alloc((128, 8192), nk.bfloat16)
    s = b.alloc((128, 1), dtype_out)
    b.dma_copy(dst=t, src=x)
    if via == "reduce":
        b.tensor_reduce(dst=s, op="add", data=t, axis=1)
    else:
        junk = b.alloc((128, 8192), nk.bfloat16)
        b.activation(dst=junk, op="copy", data=t, reduce_res=s)
        b.dealloc(junk)
    b.dma_copy(dst=y, src=s)
    b.dealloc(t)
    b.dealloc(s)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize("via", ["reduce", "activation"])
@pytest.mark.parametrize("dtype_out", [nk.float32, nk.bfloat16])
def test_bf16_sum_of_8192_accumulates_in_fp32(via, dtype_out):
    x = _rand((128, 8192), nk.bfloat16, 7, 0.0, 1.0)
    out = nk.nki.run(_sum_kernel(dtype_out, via), {"x": x})["y"].astype(np.float64)
    ref = x.astype(np.float64).sum(axis=1, keepdims=True)  # ~4096
    # bf16 accumulation would stall near 512 (ulp 4 > addends); fp32 accumulation keeps ~1e-6
    # relative, then one rounding to the output dtype (bf16: half an ulp = 2**-9 relative)
    rtol = 1e-5 if dtype_out is nk.float32 else 2.0**-8
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=0)


def _floor_blocks(b, dst, src, tmp_i, tmp_f, gt):
    """floor(x) from hardware blocks: r = rne(x) (cast), floor = r - (r > x)."""
    b.tensor_copy(dst=tmp_i, src=src)
    b.tensor_copy(dst=tmp_f, src=tmp_i)
    b.tensor_tensor(dst=gt, data1=tmp_f, data2=src, op="greater")
    b.tensor_tensor(dst=dst, data1=tmp_f, data2=gt, op="subtract")


def test_floor_building_blocks_write_their_destination():
    # trn2 has no floor ALU op or activation (facts §2.5): the lowering builds it from a
    # rounding cast, a compare and a subtract. Outputs start poisoned, so an unwritten dst
    # would raise; the values must equal np.floor exactly.
    b = nk.nki.Builder("floor")
    x = b.add_input("x", (128, 64), nk.float32)
    y = b.alloc((128, 64), nk.float32, "hbm", name="y")
    t, r_i, r_f, gt, out = (
        b.alloc((128, 64), d) for d in (nk.float32, nk.int32, nk.float32, nk.float32, nk.float32)
    )
    b.dma_copy(dst=t, src=x)
    _floor_blocks(b, out, t, r_i, r_f, gt)
    b.dma_copy(dst=y, src=out)
    for v in (t, r_i, r_f, gt, out):
        b.dealloc(v)
    b.set_outputs({"y": y})
    rng = np.random.default_rng(8)
    xv = np.concatenate(
        [
            rng.uniform(-1e6, 1e6, (128, 32)),
            np.round(rng.uniform(-50, 50, (128, 16))) / 2,
            np.round(rng.uniform(-50, 50, (128, 16))),
        ],
        axis=1,
    ).astype(np.float32)
    got = nk.nki.run(b.graph, {"x": xv})["y"]
    np.testing.assert_array_equal(got, np.floor(xv.astype(np.float64)))


def test_floor_divide_building_blocks_write_their_destination():
    # floor_divide(a, b) = floor(a * (1/b)) corrected by the remainder's sign; integer-valued
    # inputs keep every step exact, so the result must equal np.floor_divide exactly.
    b = nk.nki.Builder("floor_divide")
    xa = b.add_input("a", (128, 64), nk.float32)
    xb = b.add_input("b", (128, 64), nk.float32)
    y = b.alloc((128, 64), nk.float32, "hbm", name="y")
    shape = (128, 64)
    ta, tb, q, f, r_i, r_f, gt, rem, lt, ge = (
        b.alloc(shape, nk.int32 if k == 4 else nk.float32) for k in range(10)
    )
    b.dma_copy(dst=ta, src=xa)
    b.dma_copy(dst=tb, src=xb)
    b.activation(dst=q, op="reciprocal", data=tb)
    b.tensor_tensor(dst=q, data1=ta, data2=q, op="multiply")
    _floor_blocks(b, f, q, r_i, r_f, gt)
    b.tensor_tensor(dst=rem, data1=f, data2=tb, op="multiply")
    b.tensor_tensor(dst=rem, data1=ta, data2=rem, op="subtract")
    b.tensor_scalar(dst=lt, data=rem, op0="less", operand0=0.0)
    b.tensor_tensor(dst=ge, data1=rem, data2=tb, op="greater_equal")
    b.tensor_tensor(dst=f, data1=f, data2=lt, op="subtract")
    b.tensor_tensor(dst=f, data1=f, data2=ge, op="add")
    b.dma_copy(dst=y, src=f)
    for v in (ta, tb, q, f, r_i, r_f, gt, rem, lt, ge):
        b.dealloc(v)
    b.set_outputs({"y": y})
    rng = np.random.default_rng(9)
    av = rng.integers(-1000, 1000, shape).astype(np.float32)
    bv = rng.integers(1, 50, shape).astype(np.float32)
    got = nk.nki.run(b.graph, {"a": av, "b": bv})["y"]
    np.testing.assert_array_equal(got, np.floor_divide(av.astype(np.float64), bv.astype(np.float64)))


def test_text_round_trip_of_the_programs_runs_identically():
    x = _rand((300, 1000), nk.float32, 10, -4, 4)
    g = kernels.softmax(300, 1000)
    text = str(g)
    g2 = nk.parse(text)
    assert str(g2) == text
    np.testing.assert_array_equal(nk.nki.run(g2, {"x": x})["y"], nk.nki.run(g, {"x": x})["y"])
