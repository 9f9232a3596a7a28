"""``nkigen_lite.torch.kernel_op``: compiled kernels as torch.library custom operators.

The CPU implementation runs the kernel on the NKI interpreter; the fake implementation gives
shapes to ``torch.compile``. References are PyTorch's own computation of the same function and
float64 NumPy. Tolerances: f32 rtol = atol = 2e-5 (an rmsnorm in fp32, values of order 1);
bf16 rtol = atol = 5e-2 against f32 (bf16 keeps 8 bits: relative error 2^-8 on values up to ~4,
plus the kernel's own roundings). torch is an optional extra and in no dependency group, so CI
skips this file (importorskip); run it where a CPU torch is installed.
"""

import itertools

import numpy as np
import pytest

import nkigen_lite as nk

torch = pytest.importorskip("torch")

from nkigen_lite.torch import kernel_op  # noqa: E402

EPS = 1e-6
_ids = itertools.count()


def fresh(stem: str) -> str:
    """A new operator name (torch keeps registrations for the whole process)."""
    return f"{stem}_{next(_ids)}"


def rmsnorm(x, w, eps=EPS):
    xf = x.astype(np.float32)
    return (xf / np.sqrt((xf * xf).mean(axis=-1, keepdims=True) + eps) * w).astype(x.dtype)


def rmsnorm_torch(x, w):
    xf = x.float()
    return (xf / torch.sqrt((xf * xf).mean(-1, keepdim=True) + EPS) * w).to(x.dtype)


def rmsnorm_f64(x, w):
    x = np.asarray(x, np.float64)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS) * np.asarray(w, np.float64)


def data(rows, hidden, cols, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, hidden, generator=g)
    m = torch.randn(hidden, cols, generator=g) / hidden**0.5
    w = torch.rand(cols, generator=g) + 0.5
    return x, m, w


def close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=tol, atol=tol)


def test_eager_matches_torch_and_float64():
    op = kernel_op(rmsnorm, name=fresh("rms"))
    x, _, w = data(256, 300, 300)
    y = op(x, w)
    assert y.shape == (256, 300) and y.dtype == torch.float32
    close(y, rmsnorm_torch(x, w), 2e-5)
    close(y, rmsnorm_f64(x, w), 2e-5)
    assert op.schema == "(Tensor x, Tensor w) -> Tensor"


def test_registered_under_torch_ops():
    name = fresh("rms")
    op = kernel_op(rmsnorm, name=name)
    x, _, w = data(128, 64, 64)
    close(getattr(torch.ops.nkigen, name)(x, w), op(x, w), 0)


def test_torch_compile_mixes_torch_ops_and_the_kernel():
    op = kernel_op(rmsnorm, name=fresh("rms"))

    def model(x, m, w, rms):
        h = x @ m
        return torch.tanh(rms(h, w)) + h

    x, m, w = data(256, 64, 512)
    compiled = torch.compile(lambda x, m, w: model(x, m, w, op), fullgraph=True)
    got = compiled(x, m, w)
    close(got, model(x, m, w, rmsnorm_torch), 2e-5)
    h = x.double() @ m.double()
    close(got, np.tanh(rmsnorm_f64(h, w)) + h.numpy(), 2e-4)
    assert op.cache.compiles == 1
    compiled(x, m, w)
    assert op.cache.compiles == 1


def test_opcheck_schema_fake_and_dispatch():
    op = kernel_op(rmsnorm, name=fresh("rms"))
    x, _, w = data(128, 96, 96)
    torch.library.opcheck(op, (x, w))


def test_one_compile_per_configuration_and_bf16():
    op = kernel_op(rmsnorm, name=fresh("rms"))
    x, _, w = data(128, 256, 256)
    op(x, w)
    op(x + 1, w)
    assert op.cache.compiles == 1
    yb = op(x.bfloat16(), w.bfloat16())
    assert yb.dtype == torch.bfloat16 and op.cache.compiles == 2
    close(yb.float(), rmsnorm_f64(x, w), 5e-2)
    op(x[:64], w)
    assert op.cache.compiles == 3


def test_several_outputs():
    def stats(x):
        return x.max(axis=-1), x.sum(axis=-1)

    op = kernel_op(stats, name=fresh("stats"), outputs=2)
    assert op.schema == "(Tensor x) -> (Tensor, Tensor)"
    x, _, _ = data(128, 200, 1)
    mx, s = op(x)
    close(mx, x.double().numpy().max(axis=-1), 0)
    close(s, x.double().numpy().sum(axis=-1), 1e-4)
    wrong = kernel_op(stats, name=fresh("stats"))
    with pytest.raises(nk.BuildError, match=r"compiled graph has 2 outputs \['y0', 'y1'\].*pass outputs=2"):
        wrong(x)


def test_compiled_kernel_is_a_fixed_configuration():
    g = nk.trace(rmsnorm).trace(np.empty((128, 64), np.float32), np.empty(64, np.float32))
    op = kernel_op(nk.compile(g), name=fresh("rmsk"))
    x, _, w = data(128, 64, 64)
    close(op(x, w), rmsnorm_f64(x, w), 2e-5)
    with pytest.raises(
        nk.BuildError, match=r"input 'x' was compiled for \(128, 64\) float32, got \(128, 64\) bfloat16"
    ):
        op(x.bfloat16(), w)


def test_errors_name_the_operator_and_rule():
    name = fresh("rms")
    op = kernel_op(rmsnorm, name=name)
    x, _, w = data(128, 64, 64)
    with pytest.raises(
        nk.BuildError, match=r"kernel_op\(rmsnorm\): argument 1 \(w\): dtype torch.float64 is not supported"
    ):
        op(x, w.double())
    with pytest.raises(nk.BuildError, match=f"operator nkigen::{name} is already registered"):
        kernel_op(rmsnorm, name=name)
    with pytest.raises(nk.BuildError, match="operator name 'bad-name' is not an identifier"):
        kernel_op(rmsnorm, name="bad-name")
    with pytest.raises(nk.BuildError, match=r"parameter 'xs' is variadic positional"):
        kernel_op(lambda *xs: xs[0], name=fresh("var"))
