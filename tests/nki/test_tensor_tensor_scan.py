"""nki.tensor_tensor_scan on the NKI interpreter and, emitted as NKI source, on the NumPy
simulator, against NumPy written out here: a prefix sum (data0 ones, multiply / add), a
segmented one (a 0 in data0 restarts it), a (P, 1) initial column, reversed operands, and the
cases the verifier and the simulator refuse."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import emit_nki_source
from nkigen_lite.nki.verify import verify
from nkigen_lite.nki_sim.errors import NkiSimError

P, N = 16, 40


def _kernel(op0="multiply", op1="add", initial=0.0, reverse0=False, reverse1=False, dst_dtype=nk.float32):
    """y = tensor_tensor_scan(d0, d1, initial) of the inputs d0, d1 (and c, the (P, 1) initial)."""
    b = nk.nki.Builder("scan")
    d0 = b.add_input("d0", (P, N), nk.float32)
    d1 = b.add_input("d1", (P, N), nk.float32)
    c = b.add_input("c", (P, 1), nk.float32) if initial is None else None
    y = b.alloc((P, N), dst_dtype, "hbm", name="y")
    t0, t1 = b.alloc((P, N), nk.float32, "sbuf"), b.alloc((P, N), nk.float32, "sbuf")
    b.dma_copy(dst=t0, src=d0)
    b.dma_copy(dst=t1, src=d1)
    init = initial
    if c is not None:
        init = b.alloc((P, 1), nk.float32, "sbuf")
        b.dma_copy(dst=init, src=c)
    r = b.alloc((P, N), dst_dtype, "sbuf")
    b.tensor_tensor_scan(
        dst=r, data0=t0, data1=t1, initial=init, op0=op0, op1=op1, reverse0=reverse0, reverse1=reverse1
    )
    b.dma_copy(dst=y, src=r)
    for t in (t0, t1, r) + ((init,) if c is not None else ()):
        b.dealloc(t)
    b.set_outputs({"y": y})
    return b.graph


def _both(g, inputs):
    verify(g)
    return [nk.nki.run(g, inputs)["y"], nk.simulate(emit_nki_source(g), inputs)["y"]]


def _data(seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((P, N)).astype(np.float32), rng.standard_normal((P, N)).astype(np.float32)


def test_prefix_sum_from_an_immediate():
    _, x = _data()
    want = 2.5 + np.cumsum(x.astype(np.float64), axis=1)
    for got in _both(_kernel(initial=2.5), {"d0": np.ones((P, N), np.float32), "d1": x}):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_zeros_in_data0_restart_the_sum_and_initial_is_a_column():
    _, x = _data(4)
    d0 = np.ones((P, N), np.float32)
    d0[:, 8::8] = 0.0  # segments of 8 (the first continues from the initial column)
    c = np.arange(P, dtype=np.float32)[:, None]
    want = np.cumsum(x.astype(np.float64).reshape(P, N // 8, 8), axis=2).reshape(P, N)
    want[:, :8] += c  # only the first segment starts from the carry
    for got in _both(_kernel(initial=None), {"d0": d0, "d1": x, "c": c}):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_reversed_operands_subtract_in_the_documented_order():
    a, x = _data(5)
    r = np.float64(1.0)
    want = np.empty((P, N))
    r = np.full(P, 1.0)
    for i in range(N):
        t = r - a[:, i]  # reverse0: op0(r, data0)
        r = x[:, i] - t  # reverse1: op1(data1, t)
        want[:, i] = r
    k = _kernel(op0="subtract", op1="subtract", initial=1.0, reverse0=True, reverse1=True)
    for got in _both(k, {"d0": a, "d1": x}):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_a_non_finite_value_only_reaches_the_elements_after_it():
    _, x = _data(6)
    x[:, 10] = np.inf
    want = np.cumsum(x.astype(np.float64), axis=1)
    for got in _both(_kernel(), {"d0": np.ones((P, N), np.float32), "d1": x}):
        assert np.isfinite(got[:, :10]).all() and np.isinf(got[:, 10:]).all()
        np.testing.assert_allclose(got[:, :10], want[:, :10], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"op1": "bitwise_and"}, "op1 bitwise_and is a bitvec operator"),
        ({"op0": "equal"}, "op0 equal is a compare operator"),
        ({"dst_dtype": nk.bfloat16}, "dst is bf16; tensor_tensor_scan writes fp32"),
        ({"initial": 0.1}, "initial must be an fp32 number"),
    ],
)
def test_the_verifier_refuses(kw, msg):
    with pytest.raises(nk.VerifyError, match=msg):
        verify(_kernel(**kw))


def test_the_simulator_refuses_a_narrow_dst():
    src = emit_nki_source(_kernel(dst_dtype=nk.bfloat16))
    with pytest.raises(NkiSimError, match="dst must be float32"):
        nk.simulate(src, {"d0": np.ones((P, N), np.float32), "d1": np.ones((P, N), np.float32)})


def test_cost_is_two_vector_cycles_per_element():
    from nkigen_lite.nki.target import TRN2
    from nkigen_lite.perf.instruction_cost import instruction_cost

    g = _kernel()
    (op,) = [o for o in g.walk() if o.name == "nki.tensor_tensor_scan"]
    c = instruction_cost(op, TRN2)
    assert c.engine == "vector" and c.cycles == 2 * N  # 80 cycles: above the 64-cycle minimum
