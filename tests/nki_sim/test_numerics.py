"""Numerical semantics: fp32 compute with one rounding on write, RNE/saturating float->int,
fp32 PSUM accumulation, exact integer GpSimd arithmetic, bit-vector ops, activation functions.

Every expected value is computed here in float64 / exact NumPy, independently of the simulator.
"""

import math

import ml_dtypes
import numpy as np
import pytest

from nkigen_lite.nki_sim.errors import NkiSimError

RNG = np.random.default_rng(7)


def _unary_kernel(nki, nl, nisa, body, out_dtype):
    """Kernel: load x to SBUF, run body(dst_tile, src_tile), store dst."""

    @nki.jit
    def kernel(x):
        y = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        r = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.sbuf)
        body(r, t)
        nisa.dma_copy(dst=y, src=r)
        return y

    return kernel


def test_float_to_int_rounds_to_nearest_even_and_saturates(nk):
    nki, nl, nisa = nk
    x = np.array([[2.5, 3.5, -2.5, -3.5, 300.0, -300.0, np.nan, 0.49999997]], np.float32)
    k = _unary_kernel(nki, nl, nisa, lambda r, t: nisa.tensor_copy(dst=r, src=t), nl.int8)
    np.testing.assert_array_equal(k(x), [[2, 4, -2, -4, 127, -128, 0, 0]])


def test_a_bool_is_a_rounded_saturated_byte(nk):
    """bool_ is uint8 on the chip: true when the value rounds (RNE, saturating) to a non-zero byte."""
    nki, nl, nisa = nk
    x = np.array([[0.25, 0.5, 0.75, 1.5, -7.0, 300.0, 0.0, np.nan]], np.float32)
    k = _unary_kernel(nki, nl, nisa, lambda r, t: nisa.tensor_copy(dst=r, src=t), nl.bool_)
    np.testing.assert_array_equal(k(x), [[False, False, True, True, False, True, False, False]])
    xi = np.array([[-7, 0, 1, 300]], np.int32)
    np.testing.assert_array_equal(k(xi), [[False, False, True, True]])


def test_fp32_to_bf16_rounds_once_to_nearest_even(nk):
    nki, nl, nisa = nk
    # 1 + 2**-8 is exactly halfway between bf16 neighbours 1 and 1 + 2**-7: ties to even -> 1
    # 1 + 3 * 2**-8 is halfway between 1 + 2**-7 and 1 + 2**-6: ties to even -> 1 + 2**-6
    x = np.array([[1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20]], np.float32)
    k = _unary_kernel(nki, nl, nisa, lambda r, t: nisa.tensor_copy(dst=r, src=t), nl.bfloat16)
    np.testing.assert_array_equal(k(x).astype(np.float64), [[1.0, 1 + 2**-6, 1 + 2**-7]])


def test_dma_casts_through_fp32(nk):
    nki, nl, nisa = nk

    @nki.jit
    def kernel(x):
        y = nl.ndarray(x.shape, dtype=nl.int16, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=y, src=x)
        return y

    x = np.array([[1.5, 2.5, -70000.0, 12.49]], np.float32)
    np.testing.assert_array_equal(kernel(x), [[2, 2, -32768, 12]])


def test_vector_arithmetic_is_fp32_but_gpsimd_int32_is_exact(nk):
    nki, nl, nisa = nk
    big = 2**24 + 1  # not representable in fp32

    def body(engine):
        return lambda r, t: nisa.tensor_tensor(dst=r, data1=t, data2=t, op=nl.add, engine=engine)

    x = np.full((2, 4), big, np.int32)
    exact = _unary_kernel(nki, nl, nisa, body(nisa.engine.gpsimd), nl.int32)(x)
    default = _unary_kernel(nki, nl, nisa, body(nisa.engine.unknown), nl.int32)(x)
    via_fp32 = _unary_kernel(nki, nl, nisa, body(nisa.engine.vector), nl.int32)(x)
    np.testing.assert_array_equal(exact, 2 * big)
    np.testing.assert_array_equal(default, 2 * big)  # int32 tensor_tensor defaults to GpSimd
    np.testing.assert_array_equal(via_fp32, 2**25)  # fp32(big) = 2**24, so the sum is 2**25


def test_bitvec_ops_work_on_raw_bits(nk):
    nki, nl, nisa = nk
    x = np.array([[-1, 0x12345678, 255, -256]], np.int32)

    def body(r, t):
        nisa.tensor_scalar(
            dst=r, data=t, op0=nl.right_shift, operand0=4, op1=nl.bitwise_and, operand1=0x0FFF0FFF
        )

    got = _unary_kernel(nki, nl, nisa, body, nl.int32)(x)
    expect = ((x.view(np.uint32).astype(np.int64) >> 4) & 0x0FFF0FFF).astype(np.int32)
    np.testing.assert_array_equal(got, expect)


def test_comparisons_and_logical_ops_give_one_or_zero(nk):
    nki, nl, nisa = nk
    x = np.array([[-2.0, 0.0, 0.5, 3.0]], np.float32)

    def body(r, t):
        nisa.tensor_scalar(
            dst=r, data=t, op0=nl.greater_equal, operand0=0.5, op1=nl.logical_xor, operand1=1.0
        )

    got = _unary_kernel(nki, nl, nisa, body, nl.uint8)(x)
    np.testing.assert_array_equal(got, [[1, 1, 0, 0]])


ACTIVATIONS = {
    "copy": lambda x: x,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "reciprocal": lambda x: 1 / x,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "gelu_apprx_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    "relu": lambda x: np.maximum(x, 0),
    "square": np.square,
    "erf": np.vectorize(math.erf),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "sin": np.sin,
    "arctan": np.arctan,
    "sign": np.sign,
    "abs": np.abs,
    "silu_dx": lambda x: (1 + np.exp(-x) + x * np.exp(-x)) / (1 + np.exp(-x)) ** 2,
    "gelu_dx": lambda x: (
        0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    ),
    "gelu_apprx_sigmoid": lambda x: x / (1 + np.exp(-1.702 * x)),
    "erf_dx": lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_functions_match_float64(nk, name):
    nki, nl, nisa = nk
    positive = name in ("log", "sqrt", "rsqrt", "reciprocal")
    lo, hi = (0.1, 4.0) if positive else (-1.5, 1.5)
    x = RNG.uniform(lo, hi, (8, 64)).astype(np.float32)
    scale, bias = 0.75, 0.25  # dst = f(x * scale + bias); bias from a (P, 1) tile

    @nki.jit
    def kernel(x, b):
        y = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        bt = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=bt, src=b)
        nisa.activation(dst=t, op=getattr(nl, name), data=t, bias=bt, scale=scale)
        nisa.dma_copy(dst=y, src=t)
        return y

    got = kernel(x, np.full((8, 1), bias, np.float32))
    ref = ACTIVATIONS[name](x.astype(np.float64) * scale + bias)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)


def test_tensor_reduce_sums_bf16_in_fp32(nk):
    """8192 bf16 values per partition: summed in bf16 the error would be ~1e-2 relative."""
    nki, nl, nisa = nk
    x = RNG.uniform(0.5, 1.5, (128, 8192)).astype(ml_dtypes.bfloat16)

    @nki.jit
    def kernel(x):
        y = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 8192), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=s, op=nl.add, data=t, axis=1)
        nisa.dma_copy(dst=y, src=s)
        return y

    ref = x.astype(np.float64).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(kernel(x), ref, rtol=1e-6)
    naive = np.zeros(128, ml_dtypes.bfloat16)
    for j in range(0, 8192, 64):  # what a bf16 accumulator would give (sampled columns)
        naive = (naive + x[:, j : j + 64].astype(np.float32).sum(axis=1)).astype(ml_dtypes.bfloat16)
    assert np.max(np.abs(naive.astype(np.float64) - ref[:, 0]) / ref[:, 0]) > 1e-3


def test_psum_accumulates_64_bf16_matmuls_in_fp32(nk):
    nki, nl, nisa = nk
    x = RNG.uniform(0.5, 1.5, (64, 128, 1)).astype(ml_dtypes.bfloat16)  # 8192 values

    @nki.jit
    def kernel(x):
        y = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        ones = nl.ndarray((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=ones, value=1.0)
        acc = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.psum)
        for i in nl.affine_range(64):
            chunk = nl.ndarray((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.dma_copy(dst=chunk, src=x[i])
            nisa.nc_matmul(dst=acc, stationary=ones, moving=chunk)
        s = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=s, src=acc)
        nisa.dma_copy(dst=y, src=s)
        return y

    np.testing.assert_allclose(kernel(x)[0, 0], x.astype(np.float64).sum(), rtol=1e-6)


def test_matmul_accumulate_flags(nk):
    nki, nl, nisa = nk
    a = RNG.standard_normal((16, 8)).astype(np.float32)
    b = RNG.standard_normal((16, 4)).astype(np.float32)

    @nki.jit
    def kernel(a, b):
        out = nl.ndarray((3, 8, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        ta = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
        tb = nl.ndarray((16, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        nisa.dma_copy(dst=tb, src=b)
        acc = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.psum)
        s = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.sbuf)
        for i, flags in enumerate([(None, None), (False, True), (False, False)]):
            for f in flags:
                nisa.nc_matmul(dst=acc, stationary=ta, moving=tb, accumulate=f)
            nisa.tensor_copy(dst=s, src=acc)
            nisa.dma_copy(dst=out[i], src=s)
        return out

    out = kernel(a, b)
    ab = a.astype(np.float64).T @ b
    # None, None on a fresh tile: overwrite then add; 2nd group adds onto the first (False resets)
    np.testing.assert_allclose(out[0], 2 * ab, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1], 2 * ab, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[2], ab, rtol=1e-5, atol=1e-5)


def test_vector_transpose_32x32_keeps_the_dtype(nk):
    """nki.isa.nc_transpose (0.6): dst dtype = data dtype; a casting transpose is refused."""
    nki, nl, nisa = nk
    x = RNG.standard_normal((32, 20)).astype(np.float32)

    def make(dst_dtype):
        @nki.jit
        def kernel(x):
            y = nl.ndarray((20, 32), dtype=dst_dtype, buffer=nl.shared_hbm)
            t = nl.ndarray((32, 20), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            r = nl.ndarray((20, 32), dtype=dst_dtype, buffer=nl.sbuf)
            nisa.nc_transpose(dst=r, data=t)
            nisa.dma_copy(dst=y, src=r)
            return y

        return kernel

    np.testing.assert_array_equal(make(nl.float32)(x), x.T)
    with pytest.raises(NkiSimError, match="transpose keeps the dtype"):
        make(nl.bfloat16)(x)
