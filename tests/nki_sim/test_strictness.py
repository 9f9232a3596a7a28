"""Every strictness rule of the simulator raises NkiSimError naming the call and the rule."""

import numpy as np
import pytest

from nkigen_lite.nki_sim import NkiSimError

X = np.arange(128 * 64, dtype=np.float32).reshape(128, 64) / 1000


def run(nk, body, x=X):
    """Run a kernel that loads x into SBUF tile t and calls body(nl, nisa, x_hbm, t)."""
    nki, nl, nisa = nk

    @nki.jit
    def kernel(x):
        y = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        body(nl, nisa, x, t)
        nisa.dma_copy(dst=y, src=t)
        return y

    return kernel(x)


def test_reading_unwritten_elements_raises(nk):
    def body(nl, nisa, x, t):
        u = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf, name="u")
        nisa.dma_copy(dst=u[:, 0:32], src=x[:, 0:32])
        nisa.tensor_copy(dst=t, src=u)

    with pytest.raises(NkiSimError, match=r"tensor_copy src: reads uninitialised element \(0, 32\) of .*u:"):
        run(nk, body)


@pytest.mark.parametrize(
    "index",
    [
        lambda x: x[0:129, :],
        lambda x: x[:, 60:65],
        lambda x: x[128],
        lambda x: x[:, -1],
        lambda x: x[:, 5:5],
        lambda x: x[0:2, 0:2, 0:2],
    ],
)
def test_out_of_bounds_and_bad_indices_raise(nk, index):
    def body(nl, nisa, x, t):
        index(x)

    with pytest.raises(NkiSimError, match="out of bounds|negative|empty|indices for"):
        run(nk, body)


def test_ds_beyond_the_end_raises(nk):
    def body(nl, nisa, x, t):
        nisa.dma_copy(dst=t[0:8, :], src=x[nl.ds(124, 8), :])

    with pytest.raises(NkiSimError, match=r"slice 124:132 out of bounds for dim 0 \(size 128\)"):
        run(nk, body)


def test_access_pattern_out_of_bounds_raises(nk):
    def body(nl, nisa, x, t):
        x.ap(pattern=[[64, 128], [1, 65]], offset=0)

    with pytest.raises(NkiSimError, match=r"\.ap.*outside"):
        run(nk, body)


def test_on_chip_access_pattern_cannot_stride_partitions(nk):
    def body(nl, nisa, x, t):
        t.ap(pattern=[[0, 128], [1, 64]])

    with pytest.raises(NkiSimError, match="partition step 0 must equal the 64 elements per partition"):
        run(nk, body)


def test_partition_slices_cannot_stride(nk):
    with pytest.raises(NkiSimError, match="no partition striding"):
        run(nk, lambda nl, nisa, x, t: t[0:128:2, :])


def test_dma_from_psum_raises(nk):
    def body(nl, nisa, x, t):
        p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.tensor_copy(dst=p, src=t)
        nisa.dma_copy(dst=t, src=p)

    with pytest.raises(NkiSimError, match="dma_copy: src .* is in PSUM"):
        run(nk, body)


def test_more_than_128_partitions_raises(nk):
    with pytest.raises(NkiSimError, match="129 partitions > 128"):
        run(nk, lambda nl, nisa, x, t: nl.ndarray((129, 4), dtype=nl.float32, buffer=nl.sbuf))


@pytest.mark.parametrize(
    "st_shape, mv_shape, message",
    [
        ((128, 129), (128, 8), "stationary free size M = 129 exceeds 128"),
        ((128, 8), (128, 513), "moving free size N = 513 exceeds 512"),
        ((64, 8), (32, 8), "K=64 partitions but moving has 32"),
    ],
)
def test_matmul_size_limits(nk, st_shape, mv_shape, message):
    def body(nl, nisa, x, t):
        st = nl.zeros(st_shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        mv = nl.zeros(mv_shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        dst = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=dst, stationary=st, moving=mv)

    with pytest.raises(NkiSimError, match=message):
        run(nk, body)


@pytest.mark.parametrize(
    "dst_buf, dst_dtype, st_dtype, message",
    [
        ("sbuf", "float32", "bfloat16", "dst .* must be in PSUM"),
        ("psum", "bfloat16", "bfloat16", "dst must be float32 on trn2"),
        ("psum", "float32", "float32", "fp32/tf32 inputs must pair with fp32/tf32"),
        ("psum", "float32", "int8", "int8 is not a trn2 matmul input"),
    ],
)
def test_matmul_buffer_and_dtype_rules(nk, dst_buf, dst_dtype, st_dtype, message):
    def body(nl, nisa, x, t):
        st = nl.zeros((16, 8), dtype=getattr(nl, st_dtype), buffer=nl.sbuf)
        mv = nl.zeros((16, 4), dtype=nl.bfloat16, buffer=nl.sbuf)
        dst = nl.ndarray((8, 4), dtype=getattr(nl, dst_dtype), buffer=getattr(nl, dst_buf))
        nisa.nc_matmul(dst=dst, stationary=st, moving=mv)

    with pytest.raises(NkiSimError, match=message):
        run(nk, body)


def test_accumulate_true_needs_a_matmul_initialised_location(nk):
    def body(nl, nisa, x, t):
        st = nl.zeros((16, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        mv = nl.zeros((16, 4), dtype=nl.bfloat16, buffer=nl.sbuf)
        fresh = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=fresh[0:8, 0:2], stationary=st, moving=mv[:, 0:2], accumulate=False)
        nisa.nc_matmul(dst=fresh, stationary=st, moving=mv, accumulate=True)

    with pytest.raises(NkiSimError, match=r"accumulate=True onto element \(0, 2\)"):
        run(nk, body)


def test_accumulate_true_onto_memset_psum_raises(nk):
    def body(nl, nisa, x, t):
        st = nl.zeros((16, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        mv = nl.zeros((16, 4), dtype=nl.bfloat16, buffer=nl.sbuf)
        acc = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.psum)
        nisa.memset(dst=acc, value=0.0)
        nisa.nc_matmul(dst=acc, stationary=st, moving=mv, accumulate=True)

    with pytest.raises(NkiSimError, match="which no matmul has initialised"):
        run(nk, body)


def test_psum_tensor_larger_than_a_bank_raises(nk):
    with pytest.raises(NkiSimError, match="2052 B per partition > one 2048 B bank"):
        run(nk, lambda nl, nisa, x, t: nl.ndarray((128, 513), dtype=nl.float32, buffer=nl.psum))


def test_more_than_eight_live_psum_tensors_raises(nk):
    def body(nl, nisa, x, t):
        live = [nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.psum, name=f"p{i}") for i in range(8)]
        nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.psum, name="ninth")
        del live

    with pytest.raises(NkiSimError, match="PSUM capacity exceeded allocating ninth.*live: p0"):
        run(nk, body)


def test_sbuf_capacity_is_per_partition_bytes_of_live_tensors(nk):
    def body(nl, nisa, x, t):
        keep = [nl.ndarray((128, 12 * 1024), dtype=nl.float32, buffer=nl.sbuf) for _ in range(4)]
        # 4 x 48 KiB + 256 B (t) + 16 KiB = 213248 B per partition (the partition count is irrelevant)
        nl.ndarray((1, 4096), dtype=nl.float32, buffer=nl.sbuf, name="straw")
        del keep

    with pytest.raises(NkiSimError, match=r"SBUF capacity exceeded allocating straw.* 213248 B .*> 212984 B"):
        run(nk, body)


def test_dropped_tiles_are_released(nk):
    nki, nl, nisa = nk

    def body(nl, nisa, x, t):
        for _ in range(100):  # 100 x 48 KiB would overflow if nothing were released
            u = nl.ndarray((128, 12 * 1024), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=u, value=0.0)
        del u
        for _ in range(20):
            nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.psum)

    np.testing.assert_array_equal(run(nk, body), X)


def test_tensor_tensor_with_both_inputs_in_psum_raises(nk):
    def body(nl, nisa, x, t):
        p1 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        p2 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.tensor_copy(dst=p1, src=t)
        nisa.tensor_copy(dst=p2, src=t)
        nisa.tensor_tensor(dst=t, data1=p1, data2=p2, op=nl.add)

    with pytest.raises(NkiSimError, match="data1 and data2 are both in PSUM"):
        run(nk, body)


@pytest.mark.parametrize("call", ["copy", "memset", "tensor_tensor_int32"])
def test_gpsimd_cannot_access_psum(nk, call):
    def body(nl, nisa, x, t):
        p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        if call == "copy":
            nisa.tensor_copy(dst=p, src=t, engine=nisa.engine.gpsimd)
        elif call == "memset":
            nisa.memset(dst=p, value=0.0, engine=nisa.engine.gpsimd)
        else:  # int32 tensor_tensor is routed to GpSimd by default
            i = nl.zeros((128, 64), dtype=nl.int32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=p, data1=i, data2=i, op=nl.add)

    with pytest.raises(NkiSimError, match="runs on GpSimd, which cannot access PSUM"):
        run(nk, body)


@pytest.mark.parametrize(
    "func, scale, ok",
    [("sin", 3.0, True), ("sin", 3.2, False), ("arctan", 1.5, True), ("arctan", 1.6, False)],
)
def test_sin_and_arctan_have_no_range_reduction(nk, func, scale, ok):
    x = np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64)

    def body(nl, nisa, x, t):
        nisa.activation(dst=t, op=getattr(nl, func), data=t, scale=scale)

    if ok:
        got = run(nk, body, x)
        ref = getattr(np, func)(x.astype(np.float64) * scale)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
    else:
        with pytest.raises(NkiSimError, match=f"nl.{func} input .* outside"):
            run(nk, body, x)


@pytest.mark.parametrize("buffer", ["sbuf", "private_hbm", "hbm"])
def test_outputs_must_be_shared_hbm(nk, buffer):
    nki, nl, nisa = nk

    @nki.jit
    def kernel(x):
        y = nl.ndarray(x.shape, dtype=x.dtype, buffer=getattr(nl, buffer))
        nisa.dma_copy(dst=y, src=x)
        return y

    with pytest.raises(NkiSimError, match="must be allocated in nl.shared_hbm"):
        kernel(X)


def test_outputs_must_be_fully_written_whole_tensors(nk):
    nki, nl, nisa = nk

    @nki.jit
    def partial(x):
        y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=y[0:127], src=x[0:127])
        return y

    @nki.jit
    def view(x):
        y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=y, src=x)
        return y[0:64]

    with pytest.raises(NkiSimError, match=r"reads uninitialised element \(127, 0\)"):
        partial(X)
    with pytest.raises(NkiSimError, match="return the whole tensor"):
        view(X)


def test_engine_partition_start_rule(nk):
    def body(nl, nisa, x, t):
        nisa.tensor_copy(dst=t[64:128], src=t[0:64])  # 64 partitions may start at 0 or 64
        nisa.activation(dst=t[96:104], op=nl.copy, data=t[32:40])
        nisa.tensor_copy(dst=t[8:16], src=t[0:8])

    rule = "8 partitions starting at partition 8; .* must start at a multiple of 32"
    with pytest.raises(NkiSimError, match=rule):
        run(nk, body)


def test_dma_may_start_at_any_partition(nk):
    def body(nl, nisa, x, t):
        nisa.dma_copy(dst=t[5:6, :], src=x[7, :])

    got = run(nk, body)
    expect = X.copy()
    expect[5] = X[7]
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda nl, nisa, x, t: nisa.dma_copy(dst=x, src=t), "writes kernel input"),
        (lambda nl, nisa, x, t: nl.ndarray((4, 4), dtype=nl.float32, buffer="sbuf"), "string buffer names"),
        (lambda nl, nisa, x, t: nl.ndarray((4, 4), dtype=np.float64), "float64"),
        (lambda nl, nisa, x, t: nl.ndarray((64,), dtype=nl.float32), ">= 2 dims"),
        (
            lambda nl, nisa, x, t: nisa.memset(dst=nl.ndarray((4, 4), dtype=nl.int32), value=1.5),
            "must be an int",
        ),
        (lambda nl, nisa, x, t: nisa.tensor_tensor(dst=t, data1=t, data2=x, op=nl.add), "is in HBM"),
        (
            lambda nl, nisa, x, t: nisa.tensor_tensor(dst=t, data1=t, data2=t[:, 0:32], op=nl.add),
            "elements per partition",
        ),
        (lambda nl, nisa, x, t: nisa.tensor_scalar(dst=t, data=t, op0=nl.exp, operand0=1.0), "ALU operator"),
        (lambda nl, nisa, x, t: nisa.activation(dst=t, op=nl.add, data=t), "activation function"),
        (
            lambda nl, nisa, x, t: nisa.tensor_scalar(dst=t, data=t, op0=nl.bitwise_and, operand0=1),
            "needs integer dtypes",
        ),
        (
            lambda nl, nisa, x, t: nisa.tensor_scalar(
                dst=t, data=t, op0=nl.subtract, operand0=1.0, engine=nisa.engine.scalar
            ),
            "Scalar engine trn2 supports",
        ),
        (
            lambda nl, nisa, x, t: nisa.tensor_reduce(dst=t[:, 0:1], op=nl.add, data=t, axis=0),
            "trailing free",
        ),
        (lambda nl, nisa, x, t: nisa.tensor_copy(dst=t, src=t, engine=1), "nisa.engine member"),
        (
            lambda nl, nisa, x, t: nisa.activation(
                dst=t,
                op=nl.exp,
                data=t,
                reduce_op=nl.add,
                reduce_res=nl.ndarray((128, 1), dtype=nl.float32),
                reduce_cmd=nisa.reduce_cmd.reduce,
            ),
            "never reset",
        ),
        (lambda nl, nisa, x, t: nl.exp(t), "as a function is not simulated"),
        (lambda nl, nisa, x, t: t + t, "Python arithmetic"),
        (
            lambda nl, nisa, x, t: nisa.nc_transpose(
                dst=nl.ndarray((64, 128), dtype=nl.float32), data=t, engine=nisa.engine.vector
            ),
            "at most 32x32",
        ),
        (
            lambda nl, nisa, x, t: nisa.nc_transpose(
                dst=nl.ndarray((2, 129), dtype=nl.float32, buffer=nl.psum),
                data=nl.zeros((2, 129), dtype=nl.float32),
            ),
            "at most 128x128",
        ),
        (
            lambda nl, nisa, x, t: nisa.dma_copy(dst=t.ap([[64, 128], [1, 32], [0, 2]]), src=t),
            "writes some elements more than once",
        ),
    ],
)
def test_other_rules(nk, make, message):
    with pytest.raises(NkiSimError, match=message):
        run(nk, make)


def test_calls_outside_a_kernel_and_nested_kernels_raise(nk):
    nki, nl, nisa = nk
    with pytest.raises(NkiSimError, match="nl.ndarray: called outside a running @nki.jit kernel"):
        nl.ndarray((4, 4), dtype=nl.float32)

    @nki.jit
    def inner(x):
        return x

    @nki.jit
    def outer(x):
        return inner(X)

    with pytest.raises(NkiSimError, match="called from inside kernel 'outer'"):
        outer(X)


def test_tensors_of_a_finished_call_are_unusable(nk):
    nki, nl, nisa = nk
    kept = []

    @nki.jit
    def first(x):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        kept.append(t)
        y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=y, src=t)
        return y

    @nki.jit
    def second(x):
        y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=y, src=kept[0])
        return y

    np.testing.assert_array_equal(first(X), X)
    with pytest.raises(NkiSimError, match="belongs to a kernel call that has ended"):
        second(X)


def test_an_instruction_label_must_be_a_string(nk):
    def body(nl, nisa, x, t):
        nisa.tensor_copy(dst=t, src=t, name=3)

    with pytest.raises(NkiSimError, match=r"nisa\.tensor_copy: name= labels the instruction"):
        run(nk, body)


def test_a_grid_axis_must_be_a_non_negative_int(nk):
    _, nl, _ = nk
    with pytest.raises(NkiSimError, match=r"nl\.program_id: the grid axis"):
        nl.program_id(-1)
    with pytest.raises(NkiSimError, match=r"nl\.num_programs: the grid axis"):
        nl.num_programs("x")
    assert nl.program_id(0) == 0 and nl.num_programs() == 1
