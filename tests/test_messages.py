"""Messages: one error class and wording on every run path, warnings through `warnings`,
readable repr / stage errors, verbose progress, the public exports."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk


def tanh_mm(x, w):
    return np.tanh(x @ w)


@pytest.fixture(scope="module")
def kernel_and_graph():
    g = nk.trace(tanh_mm).trace(np.empty((128, 64), np.float32), np.empty((64, 32), np.float32))
    return nk.compile(g), g


X = np.ones((128, 64), np.float32)
W = np.ones((64, 32), np.float32)


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({"x": X}, r"graph @tanh_mm inputs: missing \['w'\] \(expects \['x', 'w'\]\)"),
        ({"x": X, "w": W, "z": W}, r"graph @tanh_mm inputs: unexpected \['z'\]"),
        ({"x": X[:, :32], "w": W}, r"input 'x' has shape \(128, 32\), expected \(128, 64\)"),
        ({"x": X.astype(np.float16), "w": W}, r"input 'x' has dtype float16, expected float32"),
        ({"x": [[1.0]], "w": W}, r"input 'x' must be a NumPy array, got list"),
    ],
)
def test_three_run_paths_raise_the_same_error(kernel_and_graph, inputs, message):
    k, g = kernel_and_graph
    paths = [
        lambda: nk.run(g, inputs),
        lambda: k.run(inputs),
        lambda: nk.simulate(k, inputs),
        lambda: nk.simulate(k.nki_source(), inputs),
        lambda: nk.run(k, inputs),
    ]
    texts = set()
    for run in paths:
        with pytest.raises(nk.InterpretError, match=message) as e:
            run()
        texts.add(str(e.value))
    assert len(texts) == 1, texts


def test_nk_run_on_a_kernel_runs_it(kernel_and_graph):
    k, _ = kernel_and_graph
    x = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32)
    got = nk.run(k, {"x": x, "w": w})["y"]
    np.testing.assert_allclose(
        got, np.tanh(x.astype(np.float64) @ w.astype(np.float64)), rtol=0, atol=2e-5
    )  # f32 matmul of 64 terms
    with pytest.raises(nk.InterpretError, match="a compiled Kernel runs on the NKI interpreter"):
        nk.run(k, {"x": x, "w": w}, mode="float64")
    with pytest.raises(nk.InterpretError, match="takes a tensor Graph"):
        nk.run("graph", {})


def test_kernel_repr_is_one_line_and_ir_lists_stages(kernel_and_graph):
    k, _ = kernel_and_graph
    r = repr(k)
    assert "\n" not in r and r.startswith("<Kernel tanh_mm(x: 128x64 f32, w: 64x32 f32) -> y: 128x32 f32")
    with pytest.raises(
        nk.BuildError, match="stages: input, canonicalize, decompose, cleanup, layout, lower, deallocs, nki"
    ):
        k.ir("bogus")


def test_constant_argument_and_float64_warn():
    f = nk.trace(lambda x, s: x * s)
    with pytest.warns(nk.NkWarning, match=r"argument 's' = 1.0 is a float.*compile-time constant"):
        g = f.trace(np.ones(4, np.float32), 1.0)
    assert g.input_names == ["x"]
    with pytest.warns(nk.NkWarning, match="float64 becomes a f32 input"):
        nk.trace(np.exp).trace(np.ones(4))


def test_trace_a_ufunc_directly():
    g = nk.trace(np.add).trace(np.ones(4, np.float32), np.ones(4, np.float32))
    assert g.input_names == ["x1", "x2"]
    g = nk.trace(np.exp).trace(np.ones(4, np.float32))
    assert g.input_names == ["x"]


def test_verbose_progress_only_for_slow_compiles(capsys):
    from nkigen_lite.compiler import _Progress

    g = nk.trace(np.exp).trace(np.ones((128, 4), np.float32))
    nk.compile(g, verbose=True)  # fast: silent
    assert capsys.readouterr().err == ""
    p = _Progress("k", True, after=0.0)  # every compile counts as slow
    p.stage("decompose")
    p.stage("lower")
    err = capsys.readouterr().err.splitlines()
    assert [ln.split()[2] for ln in err] == ["decompose", "lower"]


def test_public_exports():
    from nkigen_lite.emit import NeuronSdkMissing
    from nkigen_lite.nki_sim.errors import NkiSimError
    from nkigen_lite.perf.costmodel import Estimate
    from nkigen_lite.tensor.trace_array import TraceError

    assert nk.TraceError is TraceError and nk.NkiSimError is NkiSimError
    assert nk.NeuronSdkMissing is NeuronSdkMissing and nk.Estimate is Estimate
    assert nk.TRN2.name == "trn2" and callable(nk.jit)
    assert all(hasattr(nk, n) for n in nk.__all__)
    assert "nk.compile(f, x_example, w_example)" in nk.compile.__doc__
