"""Hand-written kernels in the emitted style (source text run through simulate()), each checked
against an independent float64 NumPy reference.

Tolerances: fp32 results rtol 2e-6 (a few fp32 roundings); bf16 results rtol 2**-7 (one bf16
rounding is at most 2**-9 relative, plus the fp32 work before it); transposes, copies and
selects are exact.
"""

import ml_dtypes
import numpy as np

from nkigen_lite.nki_sim import simulate, simulate_detailed

HEADER = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n"
RNG = np.random.default_rng(1234)

HALF_SUM = (
    HEADER
    + """
OUTPUT_NAMES = ("out",)

@nki.jit
def half_sum(a, b):
    M, N = a.shape
    out = nl.ndarray((M, N), dtype=a.dtype, buffer=nl.shared_hbm)
    TP, TF = 128, 512
    for m0 in range(0, M, TP):
        p = min(TP, M - m0)
        for n0 in range(0, N, TF):
            f = min(TF, N - n0)
            ta = nl.ndarray((TP, TF), dtype=a.dtype, buffer=nl.sbuf)
            tb = nl.ndarray((TP, TF), dtype=b.dtype, buffer=nl.sbuf)
            tc = nl.ndarray((TP, TF), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=ta[0:p, 0:f], src=a[m0:m0 + p, n0:n0 + f])
            nisa.dma_copy(dst=tb[0:p, 0:f], src=b[m0:m0 + p, n0:n0 + f])
            nisa.tensor_tensor(dst=tc[0:p, 0:f], data1=ta[0:p, 0:f], data2=tb[0:p, 0:f], op=nl.add)
            nisa.tensor_scalar(dst=tc[0:p, 0:f], data=tc[0:p, 0:f], op0=nl.multiply, operand0=0.5)
            nisa.dma_copy(dst=out[m0:m0 + p, n0:n0 + f], src=tc[0:p, 0:f])
    return out
"""
)


def test_tiled_elementwise_with_remainder_tiles_fp32():
    a = RNG.standard_normal((300, 700)).astype(np.float32)
    b = RNG.standard_normal((300, 700)).astype(np.float32)
    res = simulate_detailed(HALF_SUM, {"a": a, "b": b})
    ref = 0.5 * (a.astype(np.float64) + b)
    np.testing.assert_allclose(res.outputs["out"], ref, rtol=2e-6, atol=1e-7)
    tiles = 3 * 2
    assert res.stats.instructions == {"dma": 3 * tiles, "vector": 2 * tiles}
    assert res.stats.dma_bytes == 3 * 300 * 700 * 4


def test_tiled_elementwise_bf16_rounds_once_per_instruction():
    a = RNG.standard_normal((130, 40)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((130, 40)).astype(ml_dtypes.bfloat16)
    out = simulate(HALF_SUM, {"a": a, "b": b})["out"]
    assert out.dtype == ml_dtypes.bfloat16
    ref = 0.5 * (a.astype(np.float64) + b.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2**-7, atol=2**-120)


SOFTMAX = (
    HEADER
    + """
OUTPUT_NAMES = ("y",)

@nki.jit
def softmax_kernel(x):
    y = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[0:128, 0:512], src=x[nl.ds(i * 128, 128), 0:512])
        neg_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=t, axis=(1,), negate=True, keepdims=True)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=t, op=nl.exp, data=t, bias=neg_max, scale=1.0,
                        reduce_op=nl.add, reduce_res=total, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv, op=nl.reciprocal, data=total)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=y[nl.ds(i * 128, 128), 0:512], src=t[0:128, 0:512])
    return y
"""
)


def test_row_softmax_with_fused_exp_and_sum():
    x = (RNG.standard_normal((256, 512)) * 4).astype(np.float32)
    res = simulate_detailed(SOFTMAX, {"x": x})
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    np.testing.assert_allclose(res.outputs["y"], e / e.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-9)
    # exp with reduce_res is two ScalarE instructions (compute + accumulator read-out)
    assert res.stats.instructions == {"dma": 4, "vector": 4, "scalar": 6}


MATMUL = (
    HEADER
    + """
OUTPUT_NAMES = ("c",)

@nki.jit
def matmul_kernel(a, b):
    M, K = a.shape
    _, N = b.shape
    c = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                lhs_t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
                # transposed read: partition = k index (step 1), free = m index (step K)
                nisa.dma_copy(dst=lhs_t, src=a.ap(pattern=[[1, 128], [K, 128]],
                                                  offset=m * 128 * K + k * 128))
                rhs = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=rhs, src=b[nl.ds(k * 128, 128), nl.ds(n * 512, 512)])
                nisa.nc_matmul(dst=acc, stationary=lhs_t, moving=rhs, accumulate=ACCUMULATE(k))
            res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=c[nl.ds(m * 128, 128), nl.ds(n * 512, 512)], src=res)
    return c
"""
)


def _matmul_source(accumulate_expr: str) -> str:
    return MATMUL.replace("ACCUMULATE(k)", accumulate_expr)


def _check_matmul(c, a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # fp32 accumulation of K=384 products: error bounded by ~K * 2**-24 * sum|a||b|
    bound = 384 * 2.0**-24 * (np.abs(a64) @ np.abs(b64))
    assert np.all(np.abs(c - a64 @ b64) <= bound)


def test_matmul_256x384x1024_accumulating_k_in_psum():
    a = RNG.standard_normal((256, 384)).astype(np.float32)
    b = RNG.standard_normal((384, 1024)).astype(np.float32)
    res = simulate_detailed(_matmul_source("(k > 0)"), {"a": a, "b": b})
    _check_matmul(res.outputs["c"], a, b)
    assert res.stats.instructions["tensor"] == 2 * 2 * 3
    assert res.stats.peak_psum_banks <= 2


def test_matmul_bf16_inputs_with_default_accumulate():
    a = RNG.standard_normal((256, 384)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((384, 1024)).astype(ml_dtypes.bfloat16)
    c = simulate(_matmul_source("None"), {"a": a, "b": b})["c"]
    _check_matmul(c, a, b)


TRANSPOSE = (
    HEADER
    + """
OUTPUT_NAMES = ("y",)

@nki.jit
def transpose_kernel(x):
    P, F = x.shape
    y = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    tp = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=tp, data=t, engine=nisa.engine.tensor)
    s = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=tp)
    nisa.dma_copy(dst=y, src=s)
    return y
"""
)


def test_tensor_engine_transpose_is_exact():
    for dtype in (np.float32, ml_dtypes.bfloat16):
        x = RNG.standard_normal((128, 96)).astype(dtype)
        y = simulate(TRANSPOSE, {"x": x})["y"]
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y, x.T)


CAUSAL = (
    HEADER
    + """
OUTPUT_NAMES = ("masked", "ids")

@nki.jit
def causal_kernel(s):
    masked = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    ids = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=s)
    m = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    # keep s[p, j] where p - j >= 0 (row >= column), else -1e30
    nisa.affine_select(dst=m, pattern=[[-1, 128]], channel_multiplier=1, on_true_tile=t,
                       on_false_value=-1e30, cmp_op=nl.greater_equal)
    nisa.dma_copy(dst=masked, src=m)
    it = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=it, pattern=[[1, 64]], offset=5, channel_multiplier=64)
    nisa.dma_copy(dst=ids, src=it)
    return masked, ids
"""
)


def test_iota_and_affine_select_causal_mask():
    s = RNG.standard_normal((128, 128)).astype(np.float32)
    out = simulate(CAUSAL, {"s": s})
    p, j = np.meshgrid(np.arange(128), np.arange(128), indexing="ij")
    np.testing.assert_array_equal(out["masked"], np.where(p >= j, s, np.float32(-1e30)))
    p, j = np.meshgrid(np.arange(128), np.arange(64), indexing="ij")
    np.testing.assert_array_equal(out["ids"], 5 + 64 * p + j)
    assert out["ids"].dtype == np.int32


SCALE_SHIFT = (
    HEADER
    + """
OUTPUT_NAMES = ("y", "z")

@nki.jit
def scale_shift(x, c):
    P, F = x.shape
    y = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    z = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    col = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=col, src=c.reshape((P, 1)))
    r = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.subtract, operand0=col, op1=nl.multiply, operand1=2.0)
    nisa.dma_copy(dst=y, src=r)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.subtract, operand0=col, reverse0=True,
                       engine=nisa.engine.vector)
    nisa.dma_copy(dst=z, src=r)
    return y, z
"""
)


def test_tensor_scalar_with_per_partition_operand():
    x = RNG.standard_normal((128, 256)).astype(np.float32)
    c = RNG.standard_normal(128).astype(np.float32)
    out = simulate(SCALE_SHIFT, {"x": x, "c": c})
    x64, c64 = x.astype(np.float64), c.astype(np.float64)[:, None]
    np.testing.assert_allclose(out["y"], (x64 - c64) * 2.0, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(out["z"], c64 - x64, rtol=2e-6, atol=1e-7)


WINDOWS = (
    HEADER
    + """
OUTPUT_NAMES = ("biased", "evens", "evens_ap", "xt")

@nki.jit
def windows(x, bias):
    P, F = x.shape
    biased = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    evens = nl.ndarray((P, F // 2), dtype=nl.float32, buffer=nl.shared_hbm)
    evens_ap = nl.ndarray((P, F // 2), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((F, P), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    b = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=bias.ap(pattern=[[0, P], [1, F]], offset=0))   # broadcast row
    nisa.tensor_tensor(dst=b, data1=t, data2=b, op=nl.add)
    nisa.dma_copy(dst=biased, src=b)
    e = nl.ndarray((P, F // 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=e, src=x[:, 0:F:2])                                   # strided slice
    nisa.dma_copy(dst=evens, src=e)
    e2 = nl.ndarray((P, F // 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=e2, src=x.ap(pattern=[[F, P], [2, F // 2]], offset=0))
    nisa.dma_copy(dst=evens_ap, src=e2)
    nisa.dma_copy(dst=xt.ap(pattern=[[1, P], [P, F]], offset=0), src=t)     # transposed write
    return biased, evens, evens_ap, xt
"""
)


def test_strided_and_broadcast_access_pattern_dma_windows():
    x = RNG.standard_normal((64, 96)).astype(np.float32)
    bias = RNG.standard_normal(96).astype(np.float32)
    out = simulate(WINDOWS, {"x": x, "bias": bias})
    np.testing.assert_allclose(out["biased"], x.astype(np.float64) + bias, rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(out["evens"], x[:, ::2])
    np.testing.assert_array_equal(out["evens_ap"], x[:, ::2])
    np.testing.assert_array_equal(out["xt"], x.T)
