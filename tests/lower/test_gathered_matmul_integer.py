"""Integer matmuls on gathered rows are exact (NumPy's int64 result wrapped to the result dtype,
tolerance 0, through nk.run, Kernel.run and nk.simulate): the gathered_matmul kernel takes only
bf16 / f16 / f32, so canonicalize leaves integer ``a @ table[ids]`` (embedding rows, a mixture of
experts' selected matrices) a gather and a matmul for WideIntMatmul; a ``tensor.gathered_matmul``
built directly with operands its kernel does not take expands into its definition (before: a
BuildError at lowering), the integer one then exact the same way."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing.exact import assert_exact_three_ways

RNG = np.random.default_rng(404)


def _values(dtype, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True).astype(dtype)


def _want(a, b, dtype) -> np.ndarray:
    return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dtype)


_three_ways = assert_exact_three_ways


@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.int8, np.int16])
def test_embedding_rows_times_weights(dt):
    table, w = _values(dt, (50, 300)), _values(dt, (300, 16))
    ids = RNG.integers(0, 50, (2, 6)).astype(np.int32)
    g = nk.trace(lambda table, ids, w: table[ids] @ w).trace(table, ids, w)
    _three_ways(g, {"table": table, "ids": ids, "w": w}, _want(table[ids], w, dt))


def test_selected_expert_matrices():
    """a (n, 1, K) @ table[ids]: the shape canonicalize turns into gathered_matmul for floats."""
    a, table = _values(np.int32, (4, 1, 64)), _values(np.int32, (8, 64, 32))
    ids = np.array([3, 0, 7, 3], np.int32)
    g = nk.trace(lambda a, table, ids: a @ table[ids]).trace(a, table, ids)
    _three_ways(g, {"a": a, "table": table, "ids": ids}, _want(a, table[ids], np.int32))


@pytest.mark.parametrize("dt", [np.int32, np.int8])
def test_direct_integer_gathered_matmul_expands(dt):
    """Fails before: a BuildError (the kernel takes bf16 / f16 / f32 only)."""
    b = nk.Builder("g")
    ndt = nk.int32 if dt is np.int32 else nk.int8
    a = b.add_input("a", (4, 1, 64), ndt)
    t = b.add_input("t", (8, 64, 32), ndt)
    i = b.add_input("i", (8,), nk.int32)
    b.set_outputs({"y": b.gathered_matmul(a, t, i, group=2)})
    av, tv = _values(dt, (4, 1, 64)), _values(dt, (8, 64, 32))
    iv = RNG.integers(0, 8, (8,)).astype(np.int32)
    want = _want(np.repeat(av, 2, axis=0), tv[iv], dt)
    _three_ways(b.graph, {"a": av, "t": tv, "i": iv}, want)


def test_direct_float_gathered_matmul_of_shapes_the_kernel_refuses_expands():
    """Fails before: K = 20 has no divisor in [32, 128], a BuildError at lowering. f32
    tolerance: 1e-5 relative to float64."""
    b = nk.Builder("g")
    a = b.add_input("a", (3, 1, 20), nk.float32)
    t = b.add_input("t", (5, 20, 16), nk.float32)
    i = b.add_input("i", (3,), nk.int32)
    b.set_outputs({"y": b.gathered_matmul(a, t, i)})
    av = RNG.standard_normal((3, 1, 20)).astype(np.float32)
    tv = RNG.standard_normal((5, 20, 16)).astype(np.float32)
    iv = np.array([4, 0, 4], np.int32)
    want = av.astype(np.float64) @ tv[iv].astype(np.float64)
    got = nk.compile(b.graph).run({"a": av, "t": tv, "i": iv})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
