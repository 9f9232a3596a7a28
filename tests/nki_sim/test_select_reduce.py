"""Predicated copies, selects, reductions and accumulator-register commands against NumPy."""

import numpy as np

RNG = np.random.default_rng(99)


def test_tensor_copy_predicated_and_select_reduce(nk):
    nki, nl, nisa = nk
    a = RNG.standard_normal((32, 40)).astype(np.float32)
    b = RNG.standard_normal((32, 40)).astype(np.float32)
    pred = (RNG.random((32, 40)) < 0.4).astype(np.uint8)

    @nki.jit
    def kernel(a, b, pred):
        outs = [nl.ndarray((32, 40), dtype=nl.float32, buffer=nl.shared_hbm) for _ in range(3)]
        row_max = nl.ndarray((32, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        ta = nl.ndarray((32, 40), dtype=nl.float32, buffer=nl.sbuf)
        tb = nl.ndarray((32, 40), dtype=nl.float32, buffer=nl.sbuf)
        tp = nl.ndarray((32, 40), dtype=nl.uint8, buffer=nl.sbuf)
        for dst, src in ((ta, a), (tb, b), (tp, pred)):
            nisa.dma_copy(dst=dst, src=src)
        r = nl.ndarray((32, 40), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=ta)
        nisa.tensor_copy_predicated(dst=r, src=tb, predicate=tp)  # r = pred ? b : a
        nisa.dma_copy(dst=outs[0], src=r)
        nisa.tensor_copy_predicated(dst=r, src=7.0, predicate=tp, reverse_pred=True)
        nisa.dma_copy(dst=outs[1], src=r)  # r = pred ? b : 7
        m = nl.ndarray((32, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(
            dst=r,
            predicate=tp,
            on_true=ta,
            on_false=-100.0,
            reduce_res=m,
            reduce_cmd=nisa.reduce_cmd.reset_reduce,
            reduce_op=nl.maximum,
        )
        nisa.dma_copy(dst=outs[2], src=r)
        nisa.dma_copy(dst=row_max, src=m)
        return (*outs, row_max)

    got = kernel(a, b, pred)
    on = pred != 0
    np.testing.assert_array_equal(got[0], np.where(on, b, a))
    np.testing.assert_array_equal(got[1], np.where(on, b, np.float32(7)))
    selected = np.where(on, a, np.float32(-100))
    np.testing.assert_array_equal(got[2], selected)
    np.testing.assert_array_equal(got[3][:, 0], selected.max(axis=1))


def test_tensor_reduce_axes_negate_and_bitwise(nk):
    nki, nl, nisa = nk
    x = RNG.standard_normal((64, 4, 6, 5)).astype(np.float32)
    bits = RNG.integers(0, 2**16, (64, 8)).astype(np.uint16)

    @nki.jit
    def kernel(x, bits):
        neg_sum = nl.ndarray((64, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        prod = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        ored = nl.ndarray((64, 1), dtype=nl.uint16, buffer=nl.shared_hbm)
        t = nl.ndarray((64, 4, 6, 5), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        s = nl.ndarray((64, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=s, op=nl.add, data=t, axis=(2, 3), negate=True)
        nisa.dma_copy(dst=neg_sum, src=s)
        p = nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=p, op=nl.multiply, data=t[:, 0, 0, 0:3], axis=-1, keepdims=True)
        nisa.dma_copy(dst=prod, src=p)
        tb = nl.ndarray((64, 8), dtype=nl.uint16, buffer=nl.sbuf)
        nisa.dma_copy(dst=tb, src=bits)
        o = nl.ndarray((64, 1), dtype=nl.uint16, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=o, op=nl.bitwise_or, data=tb, axis=1)
        nisa.dma_copy(dst=ored, src=o)
        return neg_sum, prod, ored

    neg_sum, prod, ored = kernel(x, bits)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(neg_sum, -x64.sum(axis=(2, 3)), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(prod[:, 0], x64[:, 0, 0, 0:3].prod(axis=1), rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(ored[:, 0], np.bitwise_or.reduce(bits, axis=1))


def test_activation_accumulates_across_instructions(nk):
    """reset_reduce then reduce: the register holds the sum over both instructions' rows."""
    nki, nl, nisa = nk
    x = RNG.standard_normal((128, 2, 100)).astype(np.float32)

    @nki.jit
    def kernel(x):
        y = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 2, 100), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        sq = nl.ndarray((128, 100), dtype=nl.bfloat16, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=sq, op=nl.square, data=t[:, 0, :], reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reset_reduce
        )
        nisa.activation(
            dst=sq,
            op=nl.square,
            data=t[:, 1, :],
            reduce_op=nl.add,
            reduce_res=total,
            reduce_cmd=nisa.reduce_cmd.reduce,
        )
        nisa.dma_copy(dst=y, src=total)
        return y

    # the reduction sees the fp32 results, not the bf16 values written to dst
    np.testing.assert_allclose(kernel(x)[:, 0], (x.astype(np.float64) ** 2).sum(axis=(1, 2)), rtol=2e-6)


def test_memset_zeros_and_integer_fill(nk):
    nki, nl, nisa = nk

    @nki.jit
    def kernel(x):
        y = nl.ndarray((4, 3), dtype=nl.int16, buffer=nl.shared_hbm)
        z = nl.zeros((4, 3), dtype=nl.int16, buffer=nl.sbuf)
        nisa.memset(dst=z[0:1, 1:3], value=-7, engine=nisa.engine.gpsimd)
        tx = nl.ndarray((4, 3), dtype=nl.int16, buffer=nl.sbuf)
        nisa.dma_copy(dst=tx, src=x)
        nisa.tensor_tensor(dst=z, data1=z, data2=tx, op=nl.add)
        nisa.dma_copy(dst=y, src=z)
        return y

    x = np.arange(12, dtype=np.int16).reshape(4, 3)
    expect = x.copy()
    expect[0, 1:3] -= 7
    np.testing.assert_array_equal(kernel(x), expect)
