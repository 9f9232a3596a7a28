"""The emitted kernel body stays inside what the NKI 0.6 kernel language documents: no `del`,
no builtin calls such as float("inf") (non-finite immediates are `math.inf` / `math.nan`, the
names the NKI front end's global environment defines), no module-level helper names, loops over
plain `range` (nl.affine_range / nl.sequential_range are deprecated aliases in 0.6)."""

import ast

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.registry import WORKLOADS, _load_all

from ..workload_kernels import workload_kernel

_load_all()


def _kernel_def(src: str) -> ast.FunctionDef:
    tree = ast.parse(src)
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    return fn


def check_kernel_language(src: str) -> None:
    """Assert the documented-construct rules on the ``@nki.jit`` function of ``src``."""
    fn = _kernel_def(src)
    for n in ast.walk(fn):
        assert not isinstance(n, ast.Delete), ast.unparse(n)
        if isinstance(n, ast.Call):
            head = ast.unparse(n.func)
            assert (
                head.startswith(("nl.", "nisa.")) or head.endswith((".reshape", ".ap")) or head == "range"
            ), f"undocumented call {ast.unparse(n)}"
        if isinstance(n, ast.For):
            assert isinstance(n.iter, ast.Call) and ast.unparse(n.iter.func) == "range"
        if isinstance(n, ast.Attribute):
            assert n.attr not in ("affine_range", "sequential_range", "static_range")


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_workload_kernel_uses_documented_constructs(name):
    k = workload_kernel(name)
    check_kernel_language(k.nki_source())


def test_non_finite_immediates_are_math_names():
    b = nk.Builder("specials")
    x = b.add_input("x", (128, 64), nk.float32)
    b.set_outputs(
        {"y": b.where(x > 0, x, -np.inf), "z": b.where(x < 1, x, np.nan), "w": b.where(x < 2, np.inf, x)}
    )
    k = nk.compile(b.graph)
    src = k.nki_source()
    check_kernel_language(src)
    assert "-math.inf" in src and "math.nan" in src and "import math" in src
    assert "float(" not in src  # no module-level float("inf") definitions either
    xs = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32) * 3
    got = nk.simulate(k, {"x": xs})
    np.testing.assert_array_equal(got["y"], np.where(xs > 0, xs, -np.inf))
    np.testing.assert_array_equal(got["z"], np.where(xs < 1, xs, np.nan))
    np.testing.assert_array_equal(got["w"], np.where(xs < 2, np.inf, xs))


def test_no_special_names_when_unused():
    src = nk.compile(get_workload("rmsnorm").graph()).nki_source()
    assert "math" not in src


def test_a_matmul_operand_with_extra_free_dims_is_emitted_2d():
    """nc_matmul operands are documented 2-D: a [K, 1, M] stationary becomes a 2-D .ap."""
    b = nk.nki.Builder("mm3")
    a = b.add_input("a", (32, 32), nk.float32)
    w = b.add_input("w", (32, 64), nk.float32)
    y = b.alloc((32, 64), nk.float32, "hbm", name="y")
    st = b.alloc((32, 2, 32), name="st")
    mv = b.alloc((32, 64), name="mv")
    b.dma_copy(dst=st[:, 1:2, :], src=a)
    b.dma_copy(dst=mv, src=w)
    ps = b.alloc((32, 64), nk.float32, "psum", name="ps")
    b.nc_matmul(dst=ps, stationary=st[:, 1:2, :], moving=mv)
    out = b.alloc((32, 64), name="out")
    b.tensor_copy(dst=out, src=ps)
    b.dma_copy(dst=y, src=out)
    for t in (st, mv, ps, out):
        b.dealloc(t)
    b.set_outputs({"y": y})
    nk.nki.verify(b.graph)
    src = nk.emit.emit_nki_source(b.graph)
    assert "stationary=st.ap(pattern=[[64, 32], [1, 32]], offset=32)" in src
    check_kernel_language(src)
    rng = np.random.default_rng(1)
    av, wv = rng.standard_normal((32, 32), np.float32), rng.standard_normal((32, 64), np.float32)
    got = nk.simulate(src, {"a": av, "w": wv})["y"]
    np.testing.assert_allclose(got, av.T.astype(np.float64) @ wv, rtol=1e-5, atol=1e-4)
