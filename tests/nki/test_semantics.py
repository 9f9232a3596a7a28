"""Op semantics of the NKI interpreter against independent NumPy (float64) references."""

import math

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ds, ts
from nkigen_lite.testing.tolerance import assert_close

from .kernels import assert_dot_close

F32, I32 = nk.float32, nk.int32
RNG = np.random.default_rng(42)


def tile_prog(inputs, out_shape, out_dtype, body, out_space="sbuf"):
    """Load each input into an SBUF tile, run body(b, *tiles, out), store out."""
    b = nk.nki.Builder("prog")
    tiles = []
    for name, arr in inputs.items():
        x = b.add_input(name, arr.shape, nk.get_dtype(arr.dtype))
        t = b.alloc(arr.shape, nk.get_dtype(arr.dtype), name=name + "_t")
        b.dma_copy(dst=t, src=x)
        tiles.append(t)
    y = b.alloc(out_shape, out_dtype, "hbm", name="y")
    out = b.alloc(out_shape, out_dtype, out_space, name="out")
    body(b, *tiles, out)
    if out_space == "psum":
        o2 = b.alloc(out_shape, out_dtype, name="o2")
        b.tensor_copy(dst=o2, src=out)
        b.dma_copy(dst=y, src=o2)
        b.dealloc(o2)
    else:
        b.dma_copy(dst=y, src=out)
    for t in tiles + [out]:
        b.dealloc(t)
    b.set_outputs({"y": y})
    return nk.nki.run(b.graph, inputs)["y"]


A = RNG.uniform(-3, 3, (128, 64)).astype(np.float32)
B = RNG.uniform(-3, 3, (128, 64)).astype(np.float32)
B[:, :8] = A[:, :8]  # some equal pairs for the comparisons
REF_TT = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "logical_and": lambda a, b: (a > 0) & (b > 0),
    "logical_or": lambda a, b: (a > 0) | (b > 0),
    "logical_xor": lambda a, b: (a > 0) ^ (b > 0),
}


@pytest.mark.parametrize("op", sorted(REF_TT))
def test_tensor_tensor_vector_ops(op):
    a, b = (A, B) if not op.startswith("logical") else (np.maximum(A, 0), np.maximum(B, 0))
    got = tile_prog(
        {"a": a, "b": b},
        (128, 64),
        F32,
        lambda bb, ta, tb, o: bb.tensor_tensor(dst=o, data1=ta, data2=tb, op=op),
    )
    ref = REF_TT[op](a.astype(np.float64), b.astype(np.float64)).astype(np.float64)
    assert_close(got, ref, F32)  # one fp32 op rounded once; compares/logicals exactly 1 or 0


def test_tensor_tensor_power_on_gpsimd():
    a = np.abs(A) + 0.5
    got = tile_prog(
        {"a": a, "b": B},
        (128, 64),
        F32,
        lambda bb, ta, tb, o: bb.tensor_tensor(dst=o, data1=ta, data2=tb, op="power", engine="gpsimd"),
    )
    assert_close(got, a.astype(np.float64) ** B.astype(np.float64), F32)


@pytest.mark.parametrize(
    "op,ref",
    [
        ("bitwise_and", lambda a, b: a & b),
        ("bitwise_or", lambda a, b: a | b),
        ("bitwise_xor", lambda a, b: a ^ b),
        ("left_shift", lambda a, b: (a.astype(np.uint32) << b.astype(np.uint32)).astype(np.int32)),
        ("right_shift", lambda a, b: (a.astype(np.uint32) >> b.astype(np.uint32)).astype(np.int32)),
    ],
)
def test_bitwise_ops_act_on_raw_bits(op, ref):
    a = RNG.integers(-(2**31), 2**31 - 1, (128, 32), dtype=np.int64).astype(np.int32)
    s = RNG.integers(0, 31, (128, 32)).astype(np.int32)
    got = tile_prog(
        {"a": a, "b": s},
        (128, 32),
        I32,
        lambda bb, ta, tb, o: bb.tensor_tensor(dst=o, data1=ta, data2=tb, op=op),
    )
    np.testing.assert_array_equal(got, ref(a, s))


@pytest.mark.parametrize("engine,expect", [("vector", 2**24 + 2), ("gpsimd", 2**24 + 3)])
def test_integer_arithmetic_is_fp32_on_vector_and_exact_on_gpsimd(engine, expect):
    # VectorE converts int32 to fp32 (2**24 + 1 and + 2 become 2**24 and 2**24 + 2) before adding
    a = np.full((128, 4), 2**24 + 1, np.int32)
    b = np.full((128, 4), 2, np.int32)
    got = tile_prog(
        {"a": a, "b": b},
        (128, 4),
        I32,
        lambda bb, ta, tb, o: bb.tensor_tensor(dst=o, data1=ta, data2=tb, op="add", engine=engine),
    )
    np.testing.assert_array_equal(got, np.full((128, 4), expect, np.int32))


def test_tensor_scalar_two_ops_reverse_and_column_operand():
    col = RNG.uniform(1, 2, (128, 1)).astype(np.float32)

    def body(bb, ta, tc, o):
        bb.tensor_scalar(
            dst=o, data=ta, op0="subtract", operand0=tc, reverse0=True, op1="multiply", operand1=-0.5
        )

    got = tile_prog({"a": A, "c": col}, (128, 64), F32, body)
    ref = (col.astype(np.float64) - A) * -0.5
    assert_close(got, ref, F32, rtol=2e-6, atol=2e-6)  # two fp32 roundings


def test_tensor_scalar_on_scalar_engine_mult_add():
    got = tile_prog(
        {"a": A},
        (128, 64),
        F32,
        lambda bb, ta, o: bb.tensor_scalar(
            dst=o, data=ta, op0="multiply", operand0=3.0, op1="add", operand1=1.0, engine="scalar"
        ),
    )
    assert_close(got, A.astype(np.float64) * 3 + 1, F32)


@pytest.mark.parametrize(
    "op,ref,axis",
    [
        ("maximum", np.max, (1, 2)),
        ("minimum", np.min, (2,)),
        ("add", np.sum, (2,)),
        ("multiply", np.prod, (1, 2)),
    ],
)
@pytest.mark.parametrize("negate", [False, True])
def test_tensor_reduce_trailing_axes(op, ref, axis, negate):
    x = RNG.uniform(0.5, 1.5, (128, 4, 8)).astype(np.float32)
    kept = 4 if axis == (2,) else 1

    def body(bb, tx, o):
        bb.tensor_reduce(dst=o, op=op, data=tx, axis=axis, negate=negate)

    got = tile_prog({"x": x}, (128, kept), F32, body)
    r = ref(x.astype(np.float64), axis=axis).reshape(128, kept)
    assert_close(got, -r if negate else r, F32)


def test_tensor_reduce_bitwise_or_on_ints():
    x = RNG.integers(0, 2**20, (128, 16)).astype(np.int32)
    got = tile_prog(
        {"x": x}, (128, 1), I32, lambda bb, tx, o: bb.tensor_reduce(dst=o, op="bitwise_or", data=tx, axis=1)
    )
    np.testing.assert_array_equal(got, np.bitwise_or.reduce(x, axis=1, keepdims=True))


def test_iota_pattern_channel_multiplier_and_loop_offset():
    b = nk.nki.Builder("iota")
    y = b.alloc((2, 128, 32), F32, "hbm", name="y")
    with b.fori_loop(0, 2) as i:
        t = b.alloc((128, 4, 8), F32)
        b.iota(dst=t, pattern=[[2, 4], [1, 8]], offset=i * 1000 + 5, channel_multiplier=3)
        b.dma_copy(dst=y[ds(i, 1), :, :], src=t)
        b.dealloc(t)
    b.set_outputs({"y": y})
    got = nk.nki.run(b.graph, {})["y"]
    it, c, k1, k2 = np.meshgrid(np.arange(2), np.arange(128), np.arange(4), np.arange(8), indexing="ij")
    ref = (it * 1000 + 5 + 3 * c + 2 * k1 + k2).reshape(2, 128, 32)
    np.testing.assert_array_equal(got, ref.astype(np.float32))


def test_affine_select_builds_a_causal_mask():
    x = RNG.standard_normal((128, 128)).astype(np.float32)
    got = tile_prog(
        {"x": x},
        (128, 128),
        F32,
        lambda bb, tx, o: bb.affine_select(
            dst=o,
            pattern=[[-1, 128]],
            channel_multiplier=1,
            on_true_tile=tx,
            on_false_value=-np.inf,
            cmp_op="greater_equal",
        ),
    )
    r, c = np.indices((128, 128))
    np.testing.assert_array_equal(got, np.where(c <= r, x, -np.inf))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("on_false", ["imm", "column"])
def test_select(on_false, reverse):
    pred = (RNG.uniform(size=(128, 64)) > 0.5).astype(np.uint8)

    def body(bb, tp, ta, tb, o):
        bb.select(
            dst=o,
            predicate=tp,
            on_true=ta,
            on_false=-7.0 if on_false == "imm" else tb[0:128, 0:1],
            reverse_pred=reverse,
        )

    got = tile_prog({"p": pred, "a": A, "b": B}, (128, 64), F32, body)
    keep = (pred == 0) if reverse else (pred != 0)
    np.testing.assert_array_equal(got, np.where(keep, A, -7.0 if on_false == "imm" else B[:, :1]))


def test_select_reduce_max():
    """select_reduce with reduce_res: each partition's max of the selected values, -inf where
    everything is replaced by -inf; a NaN among the selected values is refused (undocumented)."""
    pred = (RNG.uniform(size=(128, 64)) > 0.3).astype(np.uint8)
    pred[5] = 0

    def body(bb, tp, ta, o):
        sel = bb.alloc((128, 64), F32, name="sel")
        bb.select(dst=sel, predicate=tp, on_true=ta, on_false=float("-inf"), reduce_res=o)
        bb.dealloc(sel)

    got = tile_prog({"p": pred, "a": A}, (128, 1), F32, body)
    np.testing.assert_array_equal(got, np.where(pred != 0, A, -np.inf).max(axis=1, keepdims=True))
    nan_a = A.copy()
    nan_a[3, 7] = np.nan
    with pytest.raises(Exception, match="NaN"):
        tile_prog({"p": np.ones((128, 64), np.uint8), "a": nan_a}, (128, 1), F32, body)


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


ACT_REF = {
    "copy": lambda x: x,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: x**-0.5,
    "reciprocal": lambda x: 1 / x,
    "tanh": np.tanh,
    "sigmoid": _sig,
    "silu": lambda x: x * _sig(x),
    "silu_dx": lambda x: _sig(x) + x * _sig(x) * (1 - _sig(x)),
    "gelu": _gelu,
    "gelu_dx": lambda x: (
        0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    ),
    "gelu_apprx_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    "gelu_apprx_sigmoid": lambda x: x * _sig(1.702 * x),
    "relu": lambda x: np.maximum(x, 0),
    "square": np.square,
    "erf": np.vectorize(math.erf),
    "erf_dx": lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x),
    "softplus": _softplus,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "sin": np.sin,
    "arctan": np.arctan,
    "sign": np.sign,
    "abs": np.abs,
}
POSITIVE = {"log", "sqrt", "rsqrt", "reciprocal"}


@pytest.mark.parametrize("func", sorted(ACT_REF))
def test_activation_functions_with_scale_and_bias(func):
    x = RNG.uniform(-1.2, 1.2, (128, 64)).astype(np.float32)
    scale = RNG.uniform(0.5, 1.0, (128, 1)).astype(np.float32)
    bias = RNG.uniform(-0.3, 0.3, (128, 1)).astype(np.float32)
    if func in POSITIVE:
        x, bias = np.abs(x) + 0.5, np.abs(bias)

    def body(bb, tx, ts_, tb, o):
        bb.activation(dst=o, op=func, data=tx, scale=ts_, bias=tb)

    got = tile_prog({"x": x, "s": scale, "b": bias}, (128, 64), F32, body)
    z = x.astype(np.float64) * scale + bias
    assert_close(got, ACT_REF[func](z), F32)


def test_dma_casts_round_to_nearest_even_and_saturate():
    x = np.array([[2.5, 3.5, -2.5, -3.5, 1e10, -1e10, np.nan, 0.49999997]] * 128, np.float32)

    def build(dt):
        b = nk.nki.Builder("cast")
        xv = b.add_input("x", x.shape, F32)
        y = b.alloc(x.shape, dt, "hbm", name="y")
        b.dma_copy(dst=y, src=xv)  # HBM -> HBM DMA with a cast
        b.set_outputs({"y": y})
        return nk.nki.run(b.graph, {"x": x})["y"]

    np.testing.assert_array_equal(build(I32)[0], [2, 4, -2, -4, 2**31 - 1, -(2**31), 0, 0])
    np.testing.assert_array_equal(build(nk.uint8)[0], [2, 4, 0, 0, 255, 0, 0, 0])
    bf = RNG.standard_normal((128, 8)).astype(np.float32)
    x[:] = bf
    np.testing.assert_array_equal(build(nk.bfloat16), bf.astype(ml_dtypes.bfloat16))


def test_tensor_copy_is_bit_exact_for_equal_dtypes_and_via_fp32_otherwise():
    a = np.full((128, 4), 2**24 + 1, np.int32)
    same = tile_prog({"a": a}, (128, 4), I32, lambda bb, ta, o: bb.tensor_copy(dst=o, src=ta))
    np.testing.assert_array_equal(same, a)
    to_f = tile_prog({"a": a}, (128, 4), F32, lambda bb, ta, o: bb.tensor_copy(dst=o, src=ta))
    np.testing.assert_array_equal(to_f, np.full((128, 4), 2.0**24, np.float32))


@pytest.mark.parametrize("dtype", [F32, nk.bfloat16, I32, nk.uint8])
def test_memset(dtype):
    v = 3 if not dtype.is_float else 2.75
    got = tile_prog({}, (128, 16), dtype, lambda bb, o: bb.memset(dst=o, value=v))
    np.testing.assert_array_equal(got, np.full((128, 16), v, dtype.np_dtype))


def test_vector_transpose_32x32():
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    got = tile_prog(
        {"x": x}, (32, 32), F32, lambda bb, tx, o: bb.nc_transpose(dst=o, data=tx, engine="vector")
    )
    np.testing.assert_array_equal(got, x.T)


def test_hbm_views_broadcast_transpose_and_strided_windows():
    w = RNG.standard_normal((4, 256)).astype(np.float32)
    b = nk.nki.Builder("views")
    wv = b.add_input("w", w.shape, F32)
    y = b.alloc((128, 256), F32, "hbm", name="y")
    yt = b.alloc((256, 4), F32, "hbm", name="yt")
    bc = b.hbm_view(wv, (128, 256), (0, 1), offset=256)  # row 1 on every partition
    t = b.alloc((128, 256))
    b.dma_copy(dst=t, src=bc)
    u = b.alloc((128, 128))
    b.dma_copy(dst=u, src=t[:, ds(1, 128, 2)])  # odd columns
    b.tensor_tensor(dst=t[:, 0:128], data1=u, data2=u, op="add")
    b.dma_copy(dst=y, src=t)
    b.dma_copy(dst=b.hbm_view(yt, (4, 256), (1, 4)), src=wv)  # write through a transposed view
    b.dealloc(t)
    b.dealloc(u)
    b.set_outputs({"y": y, "yt": yt})
    out = nk.nki.run(b.graph, {"w": w})
    ref = np.broadcast_to(w[1], (128, 256)).copy()
    ref[:, 0:128] = 2 * w[1, 1::2]
    np.testing.assert_array_equal(out["y"], ref)
    np.testing.assert_array_equal(out["yt"], w.T)


def test_sbuf_to_sbuf_dma_moves_data_across_partitions():
    x = RNG.standard_normal((128, 64)).astype(np.float32)

    def body(bb, tx, o):
        bb.dma_copy(dst=o[0:64, :], src=tx[64:128, :])
        bb.dma_copy(dst=o[64:128, :], src=tx[0:64, :])

    got = tile_prog({"x": x}, (128, 64), F32, body)
    np.testing.assert_array_equal(got, np.concatenate([x[64:], x[:64]]))


def test_matmul_loops_with_loop_indexed_windows():
    a = RNG.standard_normal((128, 256)).astype(np.float32)  # [M, K], read transposed
    w = RNG.standard_normal((256, 512)).astype(np.float32)
    b = nk.nki.Builder("mm")
    av = b.add_input("a", a.shape, F32)
    wv = b.add_input("w", w.shape, F32)
    y = b.alloc((128, 512), F32, "hbm", name="y")
    ps = b.alloc((128, 512), F32, "psum")
    at_t = b.hbm_view(av, (256, 128), (1, 256))
    st, mv = b.alloc((128, 128)), b.alloc((128, 512))
    b.dma_copy(dst=st, src=at_t[0:128, :])
    b.dma_copy(dst=mv, src=wv[0:128, :])
    b.nc_matmul(dst=ps, stationary=st, moving=mv)
    with b.fori_loop(1, 2) as k:
        b.dma_copy(dst=st, src=at_t[ts(k, 128), :])
        b.dma_copy(dst=mv, src=wv[ts(k, 128), :])
        b.nc_matmul(dst=ps, stationary=st, moving=mv, accumulate=True)
    o = b.alloc((128, 512))
    b.tensor_copy(dst=o, src=ps)
    b.dma_copy(dst=y, src=o)
    for v in (ps, st, mv, o):
        b.dealloc(v)
    b.set_outputs({"y": y})
    got = nk.nki.run(b.graph, {"a": a, "w": w})["y"]
    assert_dot_close(got, a, w)
