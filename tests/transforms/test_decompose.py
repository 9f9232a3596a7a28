"""decompose: every decomposition against the undecomposed op on random inputs (negatives,
zeros, large magnitudes) in float64 mode (oracle tolerance) and faithful mode (dtype
tolerance, or exactly where the decomposition is exact), special values, target gating."""

from dataclasses import dataclass

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.dtypes import cast_array
from nkigen_lite.ir.passes import PassContext, get_pass
from nkigen_lite.nki.ops import alu
from nkigen_lite.nki.target import TRN2
from nkigen_lite.transforms import DecomposeCounts, decompose

from .helpers import assert_same_semantics, copy_graph, wide_floats, wide_ints

N = 4096


def _graph(build, *specs):
    b = nk.Builder("t")
    xs = [b.add_input(f"x{i}", shape, dt) for i, (shape, dt) in enumerate(specs)]
    b.set_outputs({"y": build(b, *xs)})
    return b.graph


def _decomposed(g, target=None):
    after = copy_graph(g)
    decompose(after, target)
    after.verify()
    return after


def _names(g):
    return {op.name for op in g.walk()}


FLOAT_CASES = {
    "div": (lambda b, x, y: x / y, 2),
    "pow5": (lambda b, x: x**5, 1),
    "pow-3": (lambda b, x: x**-3, 1),
    "pow0": (lambda b, x: x**0, 1),
    "floor": (lambda b, x: b.floor(x), 1),
    "ceil": (lambda b, x: b.ceil(x), 1),
    "cos": (lambda b, x: b.cos(x), 1),
    "sin": (lambda b, x: b.sin(x), 1),
    "arctan": (lambda b, x: b.arctan(x), 1),
}


@pytest.mark.parametrize("name", FLOAT_CASES)
def test_float_elementwise_decompositions(name):
    build, arity = FLOAT_CASES[name]
    g = _graph(build, *[((N,), nk.float32)] * arity)
    after = _decomposed(g)
    op_name = {"div": "tensor.div", "cos": "tensor.cos"}.get(name)
    if op_name:
        assert op_name not in _names(after)
    rng = np.random.default_rng(hash(name) % 2**32)
    feed = {f"x{i}": wide_floats(rng, (N,)) for i in range(arity)}
    if name.startswith("pow"):  # keep x**5 finite in f32 for most elements
        feed["x0"] = wide_floats(rng, (N,), scales=(1e-2, 1.0, 10.0, 1e3))
    assert_same_semantics(g, after, feed, what=name)


@pytest.mark.parametrize("dtype", [nk.bfloat16, nk.float16, nk.float8_e4m3fn])
def test_rounding_and_trig_in_narrow_floats(dtype):
    g = _graph(
        lambda b, x: b.concat([b.floor(x), b.ceil(x), b.cos(x), b.sin(x), b.arctan(x)]), ((256,), dtype)
    )
    after = _decomposed(g)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(256) * 8).astype(dtype.np_dtype)
    assert_same_semantics(g, after, {"x0": x}, what=dtype.name)


def test_floor_ceil_are_exact_including_huge_values():
    g = _graph(lambda b, x: b.concat([b.floor(x), b.ceil(x)]), ((N,), nk.float32))
    after = _decomposed(g)
    rng = np.random.default_rng(0)
    x = wide_floats(rng, (N,), scales=(1e-3, 1.0, 1e6, 3e9, 1e30))
    x[:8] = [np.inf, -np.inf, np.nan, -0.0, 0.5, -0.5, 2.0**31, -(2.0**31)]
    for mode in ("faithful", "float64"):
        np.testing.assert_array_equal(nk.run(after, {"x0": x}, mode)["y"], nk.run(g, {"x0": x}, mode)["y"])


def test_mean_var_std_with_ddof_and_dtypes():
    def build(b, x, i):
        return b.concat(
            [
                b.mean(x, axis=1),
                b.var(x, axis=1),
                b.std(x, axis=1, ddof=1),
                b.var(x, axis=(0, 1), ddof=2).reshape(1),
                b.mean(i, axis=1),
                b.var(i, axis=1, ddof=1),
            ]
        )

    g = _graph(build, ((6, 33), nk.float32), ((6, 33), nk.int16))
    after = _decomposed(g)
    assert not any(
        op.name == "tensor.reduce" and op.attrs["kind"] in ("mean", "var", "std") for op in after.walk()
    )
    rng = np.random.default_rng(7)
    feed = {
        "x0": (rng.standard_normal((6, 33)) * 100 + 1e3).astype(np.float32),
        "x1": wide_ints(rng, (6, 33), np.int16),
    }
    assert_same_semantics(g, after, feed)


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")
def test_mean_of_bf16_sums_in_f32_and_var_with_too_large_ddof():
    g = _graph(lambda b, x: b.concat([b.mean(x, axis=0), b.var(x, axis=0, ddof=3)]), ((3, 64), nk.bfloat16))
    after = _decomposed(g)
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(nk.bfloat16.np_dtype)
    for mode in ("faithful", "float64"):
        got, ref = nk.run(after, {"x0": x}, mode)["y"], nk.run(g, {"x0": x}, mode)["y"]
        assert np.isinf(ref[64:]).all() or np.isnan(ref[64:]).any()  # N - ddof = 0
        np.testing.assert_array_equal(np.isinf(got[64:]), np.isinf(ref[64:]))
    assert_same_semantics(g, after, {"x0": x})


def test_keepdims_false_becomes_reshape():
    g = _graph(lambda b, x: b.max(x, axis=(0, 2)), ((3, 4, 5), nk.int16))
    after = _decomposed(g)
    red = [op for op in after.walk() if op.name == "tensor.reduce"]
    assert len(red) == 1 and red[0].attrs["keepdims"]
    assert "tensor.reshape" in _names(after)
    feed = {"x0": wide_ints(np.random.default_rng(2), (3, 4, 5), np.int16)}
    assert_same_semantics(g, after, feed)


@pytest.mark.parametrize("dtype", [nk.int32, nk.uint32])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_wide_int_extreme_splits_into_fp32_exact_parts(kind, dtype):
    """int32 / uint32 max / min: two f32 reductions (high and low parts), same values."""
    g = _graph(lambda b, x: b.reduce(x, (0, 2), kind, False), ((3, 4, 5), dtype))
    after = _decomposed(g)
    red = [op for op in after.walk() if op.name == "tensor.reduce"]
    assert len(red) == 2 and all(op.result.dtype is nk.float32 for op in red)
    feed = {"x0": wide_ints(np.random.default_rng(3), (3, 4, 5), dtype.np_dtype)}
    assert_same_semantics(g, after, feed)


# ---- floor_divide and mod ---------------------------------------------------------------------


def _div_graph(dtype, shape=(N,)):
    return _graph(
        lambda b, x, y: b.concat([b.floor_divide(x, y), b.mod(x, y)]), (shape, dtype), (shape, dtype)
    )


def _assert_exact(g, after, feed):
    """Equal elementwise in both modes (NaN == NaN, and +0.0 == -0.0); in float64 mode after
    rounding both to the output dtype (a narrow-float decomposition computes in f32 and casts
    back, and the float64 mode rounds casts, while the undecomposed op's result is not
    rounded there)."""
    dt = g.outputs["y"].dtype
    for mode in ("faithful", "float64"):
        got, ref = nk.run(after, feed, mode)["y"], nk.run(g, feed, mode)["y"]
        if mode == "float64" and dt.is_float:
            with np.errstate(over="ignore"):
                got, ref = cast_array(got, dt), cast_array(ref, dt)
        np.testing.assert_array_equal(got, ref, err_msg=mode)


def test_float_floor_divide_and_mod_are_exact():
    g = _div_graph(nk.float32)
    after = _decomposed(g)
    assert not {"tensor.floor_divide", "tensor.mod", "tensor.div"} & _names(after)
    rng = np.random.default_rng(11)
    a = wide_floats(rng, (N,))
    b = wide_floats(rng, (N,), zeros=0.0)
    with np.errstate(all="ignore"):
        ok = np.abs(a.astype(np.float64) / b) < 2.0**22  # the documented exact range
    b = np.where(ok, b, np.float32(1.0))
    # ties: a an exact multiple of b, and classic inexact cases like 7 // 0.1
    a[:6] = [6.0, -6.0, 7.0, 1.0, -1e-10, 0.3]
    b[:6] = [3.0, 3.0, 0.1, 0.1, 0.5, 0.1]
    _assert_exact(g, after, {"x0": a, "x1": b})


def test_float_floor_divide_and_mod_special_values():
    vals = np.array([0.0, -0.0, 1.0, -1.0, 7.5, -7.5, 0.1, 1e30, -1e-30, np.inf, -np.inf, np.nan], np.float32)
    a, b = (x.ravel() for x in np.meshgrid(vals, vals))
    with np.errstate(all="ignore"):
        ok = ~(np.abs(a.astype(np.float64) / b) >= 2.0**22) | ~np.isfinite(a * b) | (b == 0)
    a, b = a[ok], b[ok]
    g = _div_graph(nk.float32, a.shape)
    _assert_exact(g, _decomposed(g), {"x0": a, "x1": b})


def test_float_mod_beyond_the_exact_range_is_exact_or_nan():
    rng = np.random.default_rng(12)
    a = (rng.standard_normal(N) * 3e7).astype(np.float32)
    b = (rng.uniform(0.5, 2.0, N) * rng.choice([-1, 1], N)).astype(np.float32)
    b[:3], a[:3] = 1.0, [1e7, -1e7, 5e6]  # integral a with |a / b| in [2**22, 2**24): exact
    g = _div_graph(nk.float32)
    after = _decomposed(g)
    for mode in ("faithful", "float64"):
        got, ref = nk.run(after, {"x0": a, "x1": b}, mode)["y"], nk.run(g, {"x0": a, "x1": b}, mode)["y"]
        q, r = got[:N], got[N:]
        np.testing.assert_allclose(q, ref[:N], rtol=2.0**-20)
        assert np.all((r == ref[N:]) | np.isnan(r)), mode
        assert np.all(r[:3] == 0.0) and np.mean(np.isnan(r)) < 0.9


@pytest.mark.parametrize("dtype", [nk.bfloat16, nk.float16])
def test_narrow_float_floor_divide_and_mod(dtype):
    g = _div_graph(dtype, (1024,))
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(1024) * 50).astype(dtype.np_dtype)
    b = (rng.standard_normal(1024) * 5).astype(dtype.np_dtype)
    _assert_exact(g, _decomposed(g), {"x0": a, "x1": b})


@pytest.mark.parametrize("dtype", [nk.int32, nk.int16, nk.int8, nk.uint32, nk.uint16, nk.uint8])
def test_integer_floor_divide_and_mod_are_exact(dtype):
    g = _div_graph(dtype)
    after = _decomposed(g)
    rng = np.random.default_rng(dtype.bits)
    a = wide_ints(rng, (N,), dtype.np_dtype)
    b = wide_ints(rng, (N,), dtype.np_dtype)
    info = np.iinfo(dtype.np_dtype)
    edge = [info.min, info.max, 0, 1, info.max - 1, info.min + 1]
    ea, eb = (x.ravel() for x in np.meshgrid(edge, edge + ([-1, -7] if info.min else [7])))
    a[: ea.size], b[: eb.size] = ea, eb  # includes b == 0 (NumPy: 0) and INT_MIN // -1
    with np.errstate(all="ignore"):
        _assert_exact(g, after, {"x0": a, "x1": b})


def test_bool_and_mixed_operands_floor_divide():
    g = _graph(
        lambda b, x, y: b.concat([b.floor_divide(x, y), b.mod(x, 3)]), ((64,), nk.bool_), ((64,), nk.bool_)
    )
    rng = np.random.default_rng(0)
    feed = {"x0": rng.random(64) < 0.5, "x1": rng.random(64) < 0.7}
    with np.errstate(all="ignore"):
        _assert_exact(g, _decomposed(g), feed)


# ---- target gating ------------------------------------------------------------------------


@dataclass(frozen=True)
class FakeTarget:
    """A target publishing its instruction families (what decompose reads)."""

    name: str = "fake"
    num_partitions: int = 128
    activation_functions: frozenset = frozenset(alu.ACTIVATION_FUNCS)
    alu_ops: frozenset = frozenset(alu.ALU_OPS)
    reduce_ops: frozenset = frozenset(alu.REDUCE_OPS)

    def activation_domain(self, func):
        return TRN2.activation_domain(func)


def test_prod_is_native_on_trn2_and_a_tree_elsewhere():
    g = _graph(
        lambda b, x, i: b.concat(
            [b.prod(x, axis=1), b.prod(i, axis=1).astype(nk.float32), b.prod(x, axis=(0, 1)).reshape(1)]
        ),
        ((5, 13), nk.float32),
        ((5, 13), nk.int32),
    )
    assert any(op.attrs.get("kind") == "prod" for op in _decomposed(g).walk())
    target = FakeTarget(reduce_ops=frozenset(alu.REDUCE_OPS) - {"multiply"})
    after = _decomposed(g, target)
    assert not any(op.attrs.get("kind") == "prod" for op in after.walk())
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 13)).astype(np.float32) * 2
    x[0, 3] = 0.0  # a zero row, negatives everywhere: exp(sum(log)) would fail here
    x[1] = -np.abs(x[1])
    feed = {"x0": x, "x1": wide_ints(rng, (5, 13), np.int32)}
    with np.errstate(all="ignore"):
        assert_same_semantics(g, after, feed, f64_tol=(1e-12, 0.0))


def test_prod_tree_of_bf16_and_empty_axes():
    target = FakeTarget(reduce_ops=frozenset(alu.REDUCE_OPS) - {"multiply"})
    g = _graph(
        lambda b, x, e: b.concat([b.prod(x, axis=0), b.prod(e, axis=0)]),
        ((7, 4), nk.bfloat16),
        ((0, 4), nk.bfloat16),
    )
    after = _decomposed(g, target)
    x = np.random.default_rng(2).uniform(-2, 2, (7, 4)).astype(nk.bfloat16.np_dtype)
    assert_same_semantics(g, after, {"x0": x, "x1": np.zeros((0, 4), nk.bfloat16.np_dtype)})


def test_gating_follows_the_target():
    g = _graph(
        lambda b, x, y: b.concat([x / y, b.cos(x), b.ceil(x), b.floor(x), b.mod(x, y)]),
        ((8,), nk.float32),
        ((8,), nk.float32),
    )
    rich = FakeTarget(
        activation_functions=frozenset(alu.ACTIVATION_FUNCS) | {"cos", "floor"},
        alu_ops=frozenset(alu.ALU_OPS) | {"divide", "mod"},
    )
    after = _decomposed(g, rich)
    names = _names(after)
    assert {"tensor.div", "tensor.cos", "tensor.floor", "tensor.mod"} <= names
    assert "tensor.ceil" not in names  # ceil(x) = -floor(-x) when the target has floor
    rng = np.random.default_rng(4)
    feed = {"x0": wide_floats(rng, (8,)), "x1": wide_floats(rng, (8,), zeros=0.0)}
    assert_same_semantics(g, after, feed)


def test_unsupported_ops_are_named():
    g = _graph(lambda b, x: b.pow(x, 0.5), ((8,), nk.float32))
    poor = FakeTarget(alu_ops=frozenset(alu.ALU_OPS) - {"power"})
    with pytest.raises(nk.BuildError, match=r"tensor.pow is not native on fake"):
        _decomposed(g, poor)
    g = _graph(lambda b, x: x**-2, ((8,), nk.int32))
    with pytest.raises(nk.BuildError, match="negative integer powers"):
        _decomposed(g)


def test_decompose_pass_is_idempotent_and_deterministic():
    g = _graph(
        lambda b, x, y: b.concat(
            [b.cos(x), b.sin(x), b.arctan(x), b.floor_divide(x, y), b.mean(x.reshape(2, 4), axis=1)]
        ),
        ((8,), nk.float32),
        ((8,), nk.float32),
    )
    a, b2 = _decomposed(g), _decomposed(g)
    assert str(a) == str(b2)
    ctx = PassContext(target=TRN2)
    get_pass("decompose").run(a, ctx)
    assert str(a) == str(b2) and not ctx.get(DecomposeCounts)
