"""Tensor-level loops (``b.for_loop``): IR, text, verifier, tensor interpreter, lowering to one
``nki.fori_loop`` (never unrolled), NKI interpreter, simulator and cost model.

References are NumPy loops in float64 written here. Tolerances: f32 results with matmuls or
sums compare at rtol = atol = 1e-4 (fp32 rounding over a few chained 64-term contractions);
the integer-valued running sums are exact in f32 and compare exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import BuildError, VerifyError
from nkigen_lite.nki.ops import ForiLoopOp

TOL = 1e-4


def _mlp_graph(n: int, rows: int = 128, d: int = 64) -> nk.Graph:
    """h <- h + tanh(h @ w1) @ w2, n times (a repeated residual MLP layer)."""
    b = nk.Builder("residual_mlp")
    x = b.add_input("x", (rows, d), nk.float32)
    w1 = b.add_input("w1", (d, 2 * d), nk.float32)
    w2 = b.add_input("w2", (2 * d, d), nk.float32)
    y = b.for_loop(n, x, lambda i, h: h + b.tanh(h @ w1) @ w2)
    b.set_outputs({"y": y})
    return b.graph


def _mlp_inputs(rows: int = 128, d: int = 64):
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((rows, d)).astype(np.float32),
        "w1": (rng.standard_normal((d, 2 * d)) * 0.05).astype(np.float32),
        "w2": (rng.standard_normal((2 * d, d)) * 0.05).astype(np.float32),
    }


def _mlp_reference(n: int, x, w1, w2):
    h = x.astype(np.float64)
    for _ in range(n):
        h = h + np.tanh(h @ w1.astype(np.float64)) @ w2.astype(np.float64)
    return h


def _running_sum_graph(n: int) -> nk.Graph:
    """s <- s + x * i for i < n, and a second carried counter c <- c + 1 (two carried values)."""
    b = nk.Builder("running_sum")
    x = b.add_input("x", (128, 32), nk.float32)
    c0 = b.add_input("c0", (), nk.int32)

    def body(i, s, c):
        return [s + x * b.cast(i, nk.float32), c + 1]

    s, c = b.for_loop(n, [b.zeros((128, 32)) + x * 0.0, c0], body)
    b.set_outputs({"s": s, "c": c})
    return b.graph


def _fori_loops(k) -> list:
    return [op for op in k.nki.walk() if isinstance(op, ForiLoopOp) and op.attrs["upper"] > 1]


# ---- IR ---------------------------------------------------------------------------------------


def test_for_loop_prints_parses_and_verifies():
    g = _mlp_graph(3)
    text = str(g)
    assert "tensor.for_loop %x, %w1, %w2 {count = 3, carried = 1}" in text
    assert "tensor.yield" in text
    again = nk.parse(text)
    again.verify()
    assert str(again) == text
    assert str(_mlp_graph(3)) == text  # deterministic


def test_tensor_interpreter_matches_numpy():
    ins = _mlp_inputs()
    for n in (0, 1, 4):
        got = nk.run(_mlp_graph(n), ins, mode="float64")["y"]
        np.testing.assert_allclose(got, _mlp_reference(n, **ins), rtol=1e-12, atol=1e-12)
    got = nk.run(_mlp_graph(4), ins)["y"]  # faithful: fp32
    np.testing.assert_allclose(got, _mlp_reference(4, **ins), rtol=TOL, atol=TOL)


def test_running_sum_with_the_induction_variable_and_two_carried_values():
    x = np.random.default_rng(1).integers(-3, 4, (128, 32)).astype(np.float32)
    ins = {"x": x, "c0": np.array(7, np.int32)}
    g = _running_sum_graph(6)
    k = nk.compile(g)
    want_s = x.astype(np.float64) * sum(range(6))
    for out in (nk.run(g, ins), k.run(ins), nk.simulate(k, ins)):
        assert np.array_equal(out["s"], want_s)
        assert int(out["c"]) == 13
    assert len(_fori_loops(k)) >= 1


# ---- lowering ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3])
def test_repeated_mlp_compiles_to_one_loop_and_matches(n):
    ins = _mlp_inputs()
    k = nk.compile(_mlp_graph(n), verify=True)
    want = _mlp_reference(n, **ins)
    for out in (k.run(ins), nk.simulate(k, ins)):
        np.testing.assert_allclose(out["y"], want, rtol=TOL, atol=TOL)
    loops = [op for op in k.nki.walk() if isinstance(op, ForiLoopOp) and op.attrs["upper"] == n]
    assert loops, "the tensor loop became no nki.fori_loop"
    assert "for i in range(" in k.nki_source()


def test_never_unrolled_static_instructions_do_not_grow_with_the_trip_count():
    k2, k8 = nk.compile(_mlp_graph(2)), nk.compile(_mlp_graph(8))
    s2, s8 = k2.stats(), k8.stats()
    assert s2.instructions_static == s8.instructions_static
    assert s8.instructions_dynamic > s2.instructions_dynamic
    assert 3.5 < s8.instructions_dynamic / s2.instructions_dynamic < 4.5  # ~ 8 / 2 iterations
    assert k8.estimate().scheduled_ns > 3 * k2.estimate().scheduled_ns  # cost model sees the loop


def test_zero_trip_loop_returns_the_initial_values():
    ins = _mlp_inputs()
    k = nk.compile(_mlp_graph(0))
    assert np.array_equal(k.run(ins)["y"], ins["x"])


def test_nested_loops():
    b = nk.Builder("nested")
    x = b.add_input("x", (128, 16), nk.float32)

    def outer(i, acc):
        return b.for_loop(3, acc, lambda j, a: a + x + b.cast(i, nk.float32))

    b.set_outputs({"y": b.for_loop(4, x, outer)})
    xv = np.random.default_rng(2).integers(-4, 4, (128, 16)).astype(np.float32)
    want = xv.astype(np.float64).copy()
    for i in range(4):
        for _ in range(3):
            want = want + xv + i
    k = nk.compile(b.graph)
    for out in (nk.run(b.graph, {"x": xv}), k.run({"x": xv}), nk.simulate(k, {"x": xv})):
        assert np.array_equal(out["y"], want)
    bounds = sorted(op.attrs["upper"] for op in k.nki.walk() if isinstance(op, ForiLoopOp))
    assert 3 in bounds and 4 in bounds


def test_emitted_module_is_deterministic():
    assert nk.compile(_mlp_graph(3)).nki_source() == nk.compile(_mlp_graph(3)).nki_source()


# ---- errors -----------------------------------------------------------------------------------


def test_body_errors_name_the_rule():
    b = nk.Builder("bad")
    x = b.add_input("x", (4, 4), nk.float32)
    with pytest.raises(BuildError, match="returns 2 value"):
        b.for_loop(2, x, lambda i, h: [h, h])
    with pytest.raises(
        BuildError, match=r"carried value 0 is tensor<4x4xf32> but the body returns tensor<4xf"
    ):
        b.for_loop(2, x, lambda i, h: h[0])
    with pytest.raises(BuildError, match="trip count must be >= 0"):
        b.for_loop(-1, x, lambda i, h: h)


def test_hand_written_loop_reading_an_outer_value_is_rejected():
    text = """graph @g(%x: tensor<4xf32>) {
  %r = tensor.for_loop %x {count = 2, carried = 1} : tensor<4xf32> (%i: tensor<i32>, %h: tensor<4xf32>) {
    %a = tensor.add %h, %x : tensor<4xf32>
    tensor.yield %a
  }
  return y = %r
}
"""
    with pytest.raises(VerifyError, match="reads a value defined outside the loop"):
        nk.parse(text).verify()


def test_yield_of_the_wrong_type_is_rejected():
    text = """graph @g(%x: tensor<4xf32>) {
  %r = tensor.for_loop %x {count = 2, carried = 1} : tensor<4xf32> (%i: tensor<i32>, %h: tensor<4xf32>) {
    %c = tensor.cast %h {dtype = f16} : tensor<4xf16>
    tensor.yield %c
  }
  return y = %r
}
"""
    with pytest.raises(VerifyError, match=r"tensor.yield gives \(tensor<4xf16>\) but the carried values are"):
        nk.parse(text).verify()
