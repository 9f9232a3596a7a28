"""Every tensor op lowered alone, over random shapes (rank 1-4, non-multiples of 128) and
float32 / bfloat16 / float16: Kernel.run (NKI interpreter) equals nk.run (tensor interpreter)
within the output dtype's tolerance (nkigen_lite.testing.tolerance)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T

from .helpers import compile_and_compare, random

EXAMPLES = 3 if settings().max_examples <= 25 else 25
DTYPES = [nk.float32, nk.bfloat16, nk.float16]
DIM = st.one_of(st.sampled_from([1, 2, 7, 33, 127, 129, 200, 300]), st.integers(1, 260))
SHAPES = st.lists(DIM, min_size=1, max_size=4).filter(lambda s: int(np.prod(s)) <= 200_000).map(tuple)
UNARY = sorted(n for n in T.UNARY_OPS if n not in ("logical_not", "bitwise_not"))
POSITIVE = {"log", "sqrt", "rsqrt", "reciprocal"}
BINARY = sorted(n for n, c in T.BINARY_OPS.items() if c.category in ("arith", "compare"))


def _graph(build, **inputs):
    b = nk.Builder("op")
    vals = {n: b.add_input(n, a.shape, nk.get_dtype(a.dtype)) for n, a in inputs.items()}
    b.set_outputs({"y": build(b, **vals)})
    return b.graph


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=EXAMPLES, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16))
@example(shape=(300, 257), seed=1)
@example(shape=(2, 3, 5, 129), seed=2)
def test_unary(name, dtype, shape, seed):
    x = random(shape, dtype, np.random.default_rng(seed), positive=name in POSITIVE)
    compile_and_compare(_graph(lambda b, x: getattr(b, name)(x), x=x), {"x": x}, what=name)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", BINARY)
@settings(max_examples=EXAMPLES, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16), bcast=st.sampled_from(["same", "row", "col", "scalar"]))
@example(shape=(300, 257), seed=1, bcast="row")
@example(shape=(2, 130, 33), seed=2, bcast="col")
def test_binary(name, dtype, shape, seed, bcast):
    rng = np.random.default_rng(seed)
    positive = name in ("div", "floor_divide", "mod", "pow")
    x = random(shape, dtype, rng, positive=name == "pow")
    other = {"same": shape, "row": shape[:-1] + (1,), "col": shape[-1:], "scalar": ()}[bcast]
    y = random(other, dtype, rng, positive=positive)
    if name == "pow":
        y = np.clip(y.astype(np.float32), 0.5, 2.5).astype(dtype.np_dtype)
    compile_and_compare(
        _graph(lambda b, x, y: b.binary(name, x, y), x=x, y=y), {"x": x, "y": y}, what=f"{name} ({bcast})"
    )


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kind", ["sum", "max", "min", "mean", "prod", "var", "std"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16), mask=st.integers(-1, 15), keep=st.booleans())
@example(shape=(300, 257), seed=1, mask=2, keep=True)
@example(shape=(2, 130, 33), seed=2, mask=-1, keep=False)
def test_reduce(kind, dtype, shape, seed, mask, keep):
    """``mask`` picks the reduced axes as a bit set (-1: all axes, axis=None)."""
    rank = len(shape)
    axes = [d for d in range(rank) if (mask >> d) & 1] if mask >= 0 else None
    axis = None if axes is None else (tuple(axes) or -1)
    rng = np.random.default_rng(seed)
    x = random(shape, dtype, rng)
    if kind == "prod":  # keep the product finite and away from underflow
        x = (1.0 + 0.01 * rng.standard_normal(shape)).astype(dtype.np_dtype)
    reduced = range(rank) if axis is None else [a % rank for a in np.atleast_1d(axis)]
    n = int(np.prod([shape[a] for a in reduced]))
    g = _graph(lambda b, x: b.reduce(x, axis, kind, keep), x=x)
    compile_and_compare(g, {"x": x}, scale=max(1.0, np.sqrt(n) / 4), what=f"{kind} axis={axis}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=EXAMPLES, deadline=None)
@given(m=DIM, k=DIM, n=DIM, batch=st.sampled_from([(), (2,), (3, 1)]), seed=st.integers(0, 2**16))
@example(m=200, k=300, n=700, batch=(), seed=1)
@example(m=129, k=1, n=513, batch=(2,), seed=2)
def test_matmul(dtype, m, k, n, batch, seed):
    rng = np.random.default_rng(seed)
    a = random(batch + (m, k), dtype, rng, scale=1.0)
    w = random((k, n), dtype, rng, scale=1.0)
    g = _graph(lambda b, a, w: a @ w, a=a, w=w)
    compile_and_compare(g, {"a": a, "w": w}, scale=max(1.0, np.sqrt(k)), what="matmul")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=EXAMPLES, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16), data=st.data())
def test_data_movement(dtype, shape, seed, data):
    rng = np.random.default_rng(seed)
    x = random(shape, dtype, rng)
    rank = len(shape)
    perm = tuple(data.draw(st.permutations(range(rank))))
    step = data.draw(st.integers(1, 3))
    ax = data.draw(st.integers(-rank, rank - 1))
    cases = {
        "transpose": lambda b, x: b.transpose(x, perm) * 2.0,
        "reshape": lambda b, x: b.reshape(x, (-1,)) + 1.0,
        "slice": lambda b, x: x[..., ::step] - 1.0,
        "concat": lambda b, x: b.concat([x, x * 0.5], axis=ax),
        "broadcast_to": lambda b, x: b.broadcast_to(x, (2,) + shape) * 3.0,
        "raw_transpose": lambda b, x: b.transpose(x, perm),
        "raw_reshape": lambda b, x: b.reshape(b.transpose(x, perm), (-1,)),
    }
    for name, build in cases.items():
        compile_and_compare(_graph(build, x=x), {"x": x}, what=name)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=EXAMPLES, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16), data=st.data())
def test_select_cast_and_sources(dtype, shape, seed, data):
    rng = np.random.default_rng(seed)
    x = random(shape, dtype, rng)
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    cases = {
        "where": lambda b, x: b.where(x > 0.5, x, -x * 2.0),
        "where_scalar": lambda b, x: b.where(x < 0, 0.0, x),
        "cast_int": lambda b, x: (x * 10.0).astype(nk.int32),
        "cast_float": lambda b, x: x.astype(nk.float32) * 2.0,
        "cast_bool": lambda b, x: (x * 4.0).astype(nk.int8).astype(nk.bool_),
        "iota": lambda b, x: x + b.iota(shape, ax, dtype),
        "full": lambda b, x: b.full(shape, 1.5, dtype),
        "constant": lambda b, x: x * b.constant(rng.standard_normal(shape[-1:]).astype(np.float32)),
    }
    for name, build in cases.items():
        compile_and_compare(_graph(build, x=x), {"x": x}, what=name)


@pytest.mark.parametrize("dtype", [nk.int32, nk.int16, nk.uint8, nk.bool_], ids=str)
def test_integer_and_bool_ops(dtype):
    rng = np.random.default_rng(0)
    shape = (130, 33)
    if dtype.is_bool:
        x, y = rng.random(shape) < 0.5, rng.random(shape) < 0.5
        ops = ["logical_and", "logical_or", "logical_xor", "bitwise_and", "equal"]
    else:
        hi = 100 if dtype.is_signed else 200
        lo = -hi if dtype.is_signed else 0
        x = rng.integers(lo, hi, shape).astype(dtype.np_dtype)
        y = rng.integers(1, 50, shape).astype(dtype.np_dtype)
        ops = [
            "add",
            "sub",
            "mul",
            "maximum",
            "minimum",
            "bitwise_and",
            "bitwise_xor",
            "less",
            "equal",
            "floor_divide",
            "mod",
        ]
    for name in ops:
        g = _graph(lambda b, x, y, name=name: b.binary(name, x, y), x=x, y=y)
        compile_and_compare(g, {"x": x, "y": y}, what=name)
    if dtype.is_signed:
        unary = ["neg", "abs", "relu", "square", "sign"]
    else:
        unary = ["logical_not"] if dtype.is_bool else ["square"]
    for name in unary:
        g = _graph(lambda b, x, name=name: b.unary(name, x), x=x)
        compile_and_compare(g, {"x": x}, what=name)
    g = _graph(lambda b, x: b.sum(x, axis=-1), x=x)
    compile_and_compare(g, {"x": x}, what="sum")
