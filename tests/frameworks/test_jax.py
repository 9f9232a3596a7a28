"""``nkigen_lite.jax.kernel_call`` on the CPU: the compiled kernel runs on the NKI interpreter
through ``jax.pure_callback`` inside ``jax.jit``.

References are JAX's own computation of the same function (f32 on the CPU) and float64 NumPy.
Tolerances: f32 results rtol = atol = 2e-5 (one rmsnorm in fp32 plus a tanh and an add, values
of order 1); bf16 results rtol = atol = 2e-2 (two bf16 roundings: the kernel's and JAX's).
Skipped as a whole when JAX does not import (it is in the dev dependency group, so CI has it).
"""

import numpy as np
import pytest

import nkigen_lite as nk

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from nkigen_lite.jax import kernel_call  # noqa: E402

EPS = 1e-6


def rmsnorm(x, w):
    """The NumPy function compiled into an NKI kernel."""
    xf = x.astype(np.float32)
    ms = (xf * xf).mean(axis=-1, keepdims=True)
    return (xf / np.sqrt(ms + EPS) * w).astype(x.dtype)


def rmsnorm_jax(x, w):
    xf = x.astype(jnp.float32)
    ms = (xf * xf).mean(axis=-1, keepdims=True)
    return (xf / jnp.sqrt(ms + EPS) * w).astype(x.dtype)


def rmsnorm_f64(x, w):
    x = np.asarray(x, np.float64)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS) * np.asarray(w, np.float64)


def data(rows, cols, hidden, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, hidden)).astype(np.float32)
    m = (rng.standard_normal((hidden, cols)) / np.sqrt(hidden)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    return x, m, w


def test_jit_mixes_jax_ops_and_compiled_rmsnorm():
    rms = kernel_call(rmsnorm)

    def model(x, m, w, rms_fn):
        h = x @ m  # JAX
        return jnp.tanh(rms_fn(h, w)) + h  # compiled rmsnorm between JAX ops

    x, m, w = data(256, 512, 64)
    got = jax.jit(lambda x, m, w: model(x, m, w, rms))(x, m, w)
    want = jax.jit(lambda x, m, w: model(x, m, w, rmsnorm_jax))(x, m, w)
    assert got.shape == (256, 512) and got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5)
    h = np.asarray(x, np.float64) @ np.asarray(m, np.float64)
    np.testing.assert_allclose(np.asarray(got), np.tanh(rmsnorm_f64(h, w)) + h, rtol=2e-4, atol=2e-4)
    assert rms.cache.compiles == 1


def test_kernel_alone_matches_float64():
    rms = kernel_call(rmsnorm)
    x, _, w = data(128, 300, 300, seed=1)
    got = np.asarray(jax.jit(rms)(x, w))
    np.testing.assert_allclose(got, rmsnorm_f64(x, w), rtol=2e-5, atol=2e-5)


def test_one_compile_per_shape_dtype_configuration():
    rms = kernel_call(rmsnorm)
    f = jax.jit(lambda x, w: rms(x, w) * 2.0)
    g = jax.jit(lambda x, w: rms(x, w) + 1.0)  # another jit trace, same configuration
    x, _, w = data(128, 256, 256)
    f(x, w)
    g(x, w)
    rms(jnp.asarray(x), jnp.asarray(w))  # eager, same configuration
    assert rms.cache.compiles == 1
    x2, _, w2 = data(64, 96, 96)
    f(x2, w2)
    assert rms.cache.compiles == 2
    f(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16))
    assert rms.cache.compiles == 3
    assert sorted(rms.cache.kernels) == sorted(
        [
            (((128, 256), "float32"), ((256,), "float32")),
            (((64, 96), "float32"), ((96,), "float32")),
            (((128, 256), "bfloat16"), ((256,), "bfloat16")),
        ]
    )


def test_abstract_evaluation_compiles_without_running():
    def two(x):
        return x.sum(axis=1), (x * 2).astype(np.float16)

    runs = []
    call = kernel_call(two)
    real_run = call.cache.run
    call.cache.run = lambda k, a: runs.append(1) or real_run(k, a)
    out = jax.eval_shape(call, jax.ShapeDtypeStruct((4, 128, 8), jnp.float32))
    assert out == (jax.ShapeDtypeStruct((4, 8), jnp.float32), jax.ShapeDtypeStruct((4, 128, 8), jnp.float16))
    assert call.cache.compiles == 1 and runs == []
    x = np.random.default_rng(2).standard_normal((4, 128, 8)).astype(np.float32)
    s, d = jax.jit(call)(x)
    assert runs == [1]
    np.testing.assert_allclose(np.asarray(s), x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(d), (x * 2).astype(np.float16))


def test_bf16_dtype_flows_through():
    rms = kernel_call(rmsnorm)
    x, _, w = data(128, 256, 256, seed=3)
    xb, wb = jnp.asarray(x, jnp.bfloat16), jnp.asarray(w, jnp.bfloat16)
    got = jax.jit(rms)(xb, wb)
    assert got.dtype == jnp.bfloat16
    want = rmsnorm_jax(xb, wb)
    np.testing.assert_allclose(
        np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=2e-2, atol=2e-2
    )


def test_vmap_runs_per_batch_element():
    rms = kernel_call(rmsnorm)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 128, 64)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 64).astype(np.float32)
    got = jax.jit(jax.vmap(rms, in_axes=(0, None)))(x, w)
    np.testing.assert_allclose(np.asarray(got), rmsnorm_f64(x, w), rtol=2e-5, atol=2e-5)
    assert list(rms.cache.kernels) == [(((128, 64), "float32"), ((64,), "float32"))]


def test_compiled_kernel_and_graph_are_fixed_configurations():
    g = nk.trace(rmsnorm).trace(np.empty((128, 64), np.float32), np.empty(64, np.float32))
    x, _, w = data(128, 64, 64, seed=5)
    for obj in (nk.compile(g), g):
        call = kernel_call(obj)
        np.testing.assert_allclose(np.asarray(jax.jit(call)(x, w)), rmsnorm_f64(x, w), rtol=2e-5, atol=2e-5)
        with pytest.raises(
            nk.BuildError,
            match=r"input 'x' was compiled for \(128, 64\) float32, "
            r"got \(64, 64\) float32",
        ):
            call(x[:64], w)


def test_errors_name_the_call_and_the_rule():
    rms = kernel_call(rmsnorm)
    x, _, w = data(128, 64, 64)
    with pytest.raises(nk.BuildError, match=r"kernel_call\(rmsnorm\): argument 1: .*float64.*not supported"):
        rms(x, w.astype(np.float64))
    with pytest.raises(nk.BuildError, match=r"kernel_call\(rmsnorm\): argument 1 is a float, not an array"):
        rms(x, 1.0)
    with pytest.raises(nk.BuildError, match=r"kernel_call\(rmsnorm\): tracing for inputs"):
        rms(x)
    with pytest.raises(nk.BuildError, match="backend 'gpu' is not one of"):
        kernel_call(rmsnorm, backend="gpu")
    with pytest.raises(nk.BuildError, match="takes a compiled nk.Kernel, an nk.Graph or a NumPy function"):
        kernel_call(42)


def _neuron_device() -> bool:
    try:
        import nki  # noqa: F401
    except ImportError:
        return False
    return jax.default_backend() == "neuron"


@pytest.mark.neuron
@pytest.mark.skipif(not _neuron_device(), reason="needs the Neuron SDK and a Neuron device for JAX")
def test_neuron_device_path():
    """On a Neuron device, the same call runs the emitted @nki.jit kernel inside jax.jit."""
    rms = kernel_call(rmsnorm, backend="neuron")
    x, _, w = data(256, 512, 512)
    got = jax.jit(lambda x, w: jnp.tanh(rms(x, w)))(x, w)
    np.testing.assert_allclose(np.asarray(got), np.tanh(rmsnorm_f64(x, w)), rtol=1e-3, atol=1e-3)


def test_neuron_path_marshalling_on_the_simulator():
    """SURFACE CHECK of the Neuron path's argument handling (not a device run): the emitted
    module is loaded with the NumPy NKI simulator installed as ``nki`` and called with NumPy
    arrays, covering operand order, constants appended, 0-d tensors as [1], and zero-size
    outputs made by the caller."""
    from nkigen_lite.jax import _neuron_call
    from nkigen_lite.nki_sim import installed

    b = nk.Builder("odd")
    s = b.add_input("s", (), nk.float32)
    c = b.add_input("c", (3, 5), nk.float32)
    const = b.constant(np.arange(5, dtype=np.float32) * 0.25)
    b.set_outputs({"m": b.sum(c, axis=0) + const, "e": b.full((0, 3), 1.0, nk.float32), "t": s * 2.0})
    k = nk.compile(b.graph)
    rng = np.random.default_rng(6)
    sv, cv = np.asarray(rng.standard_normal(), np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    with installed():
        m, e, t = _neuron_call(k, {}, [sv, cv], xp=np)
    np.testing.assert_allclose(
        m, cv.astype(np.float64).sum(axis=0) + np.arange(5) * 0.25, rtol=1e-5, atol=1e-5
    )
    assert e.shape == (0, 3) and e.dtype == np.float32
    assert t.shape == () and float(t) == float(sv) * 2.0
