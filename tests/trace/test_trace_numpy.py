"""A broad table of NumPy calls, each traced from a plain NumPy expression: the graph's outputs
must have NumPy's dtypes (64-bit narrowed) and NumPy's values (float64 reference, f32
tolerance 1e-5 relative to max(|ref|, 1); integer and bool outputs exact)."""

import numpy as np
import pytest

import nkigen_lite as nk

from .helpers import check_against_numpy

rng = np.random.default_rng(7)
X = rng.uniform(-2, 2, (4, 6)).astype(np.float32)  # any sign
Y = rng.uniform(0.5, 2.5, (4, 6)).astype(np.float32)  # positive (log, sqrt, division)
I = rng.integers(-20, 21, (4, 6)).astype(np.int32)
J = rng.integers(1, 8, (4, 6)).astype(np.int32)  # non-zero divisors
M = rng.random((4, 6)) < 0.5
A = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
V = rng.uniform(-1, 1, (6,)).astype(np.float32)
X[0, :3] = [0.5, -1.5, 2.5 / 2]  # rounding ties
ARGS = (X, Y, I, J, M, A, V)

UFUNCS = {
    "exp": lambda x, y, i, j, m, a, v: np.exp(x),
    "log": lambda x, y, i, j, m, a, v: np.log(y),
    "sqrt": lambda x, y, i, j, m, a, v: np.sqrt(y),
    "tanh": lambda x, y, i, j, m, a, v: np.tanh(x),
    "sin_cos": lambda x, y, i, j, m, a, v: np.sin(x) + np.cos(x),
    "arctan": lambda x, y, i, j, m, a, v: np.arctan(x * 3),
    "tan": lambda x, y, i, j, m, a, v: np.tan(x * 0.5),
    "abs_sign": lambda x, y, i, j, m, a, v: np.abs(x) * np.sign(x) + np.absolute(i),
    "floor_ceil": lambda x, y, i, j, m, a, v: np.floor(x * 3) + np.ceil(x * 3),
    "trunc": lambda x, y, i, j, m, a, v: np.trunc(x * 3),
    "rint": lambda x, y, i, j, m, a, v: np.rint(x * 2),
    "negative_positive": lambda x, y, i, j, m, a, v: np.negative(x) + np.positive(x) * 2,
    "square": lambda x, y, i, j, m, a, v: np.square(x) + np.square(i),
    "reciprocal": lambda x, y, i, j, m, a, v: np.reciprocal(y),
    "log1p_expm1": lambda x, y, i, j, m, a, v: np.log1p(x * 1e-3 + 0.5) + np.expm1(x * 1e-4),
    "log1p_tiny": lambda x, y, i, j, m, a, v: np.log1p(x * 1e-6) * 1e6,
    "expm1_tiny": lambda x, y, i, j, m, a, v: np.expm1(x * 1e-6) * 1e6,
    "log2_log10_exp2": lambda x, y, i, j, m, a, v: np.log2(y) + np.log10(y) + np.exp2(x),
    "logaddexp": lambda x, y, i, j, m, a, v: np.logaddexp(x, y) + np.logaddexp(x, x),
    "isnan_isinf_isfinite": lambda x, y, i, j, m, a, v: (
        np.isnan(np.log(x)),
        np.isinf(x / (x * 0)),
        np.isfinite(np.log(x)),
        np.isnan(i),
    ),
    "fmax_fmin": lambda x, y, i, j, m, a, v: np.fmax(np.log(x), y) + np.fmin(x, np.log(x)),
    "add_sub_mul_div": lambda x, y, i, j, m, a, v: (
        np.subtract(np.add(x, y), np.multiply(x, y)) / np.divide(y, 2)
    ),
    "maximum_minimum": lambda x, y, i, j, m, a, v: np.maximum(x, 0) + np.minimum(x, y),
    "floor_divide_remainder_int": lambda x, y, i, j, m, a, v: (
        np.floor_divide(i, j),
        np.remainder(i, j),
        np.mod(-i, j),
    ),
    "floor_divide_remainder_float": lambda x, y, i, j, m, a, v: (np.floor_divide(x, y), np.remainder(x, y)),
    "power": lambda x, y, i, j, m, a, v: np.power(y, x) + np.power(x, 2) + y**0.5,
    "power_int": lambda x, y, i, j, m, a, v: np.power(i, 2) + j**3,
    "comparisons": lambda x, y, i, j, m, a, v: (
        x < y,
        x <= 0.5,
        x > y,
        x >= 0,
        x == i,
        x != y,
        np.less(i, j),
        np.greater_equal(j, 3),
    ),
    "logical": lambda x, y, i, j, m, a, v: (
        np.logical_and(m, x > 0),
        np.logical_or(m, i),
        np.logical_xor(m, x),
        np.logical_not(x),
    ),
    "bitwise": lambda x, y, i, j, m, a, v: (
        np.bitwise_and(i, j),
        np.bitwise_or(i, 12),
        np.bitwise_xor(i, j),
        np.invert(i),
        np.invert(m),
        ~m,
        m & (x > 0),
        m | m,
        m ^ (i > 0),
    ),
    "true_division_of_ints": lambda x, y, i, j, m, a, v: i / j,
    "int_with_float_scalar": lambda x, y, i, j, m, a, v: i * 1.5 + (j + 2),
    "bool_arith": lambda x, y, i, j, m, a, v: m + m * 3,
    "numpy_scalar_strong": lambda x, y, i, j, m, a, v: (
        np.float32(2) * x,
        i + np.int64(3),
        x.astype(np.float16) * np.float64(1.5),
    ),
    "array_constant": lambda x, y, i, j, m, a, v: x + np.arange(6) + np.linspace(0, 1, 6),
    "list_operand": lambda x, y, i, j, m, a, v: x * [1, 2, 3, 4, 5, 6],
    "reflected": lambda x, y, i, j, m, a, v: (2 - x, 1 / y, 2**x, 7 // j, 7 % j, 3 * x),
    "matmul": lambda x, y, i, j, m, a, v: (np.matmul(x, a), x @ a, a.T @ v, v @ a, x @ v),
    "ufunc_reduce": lambda x, y, i, j, m, a, v: (
        np.add.reduce(x),
        np.maximum.reduce(x, axis=1),
        np.multiply.reduce(y, axis=None),
        np.logical_or.reduce(m, axis=1, keepdims=True),
        np.minimum.reduce(i, axis=0, initial=-5),
    ),
    "ufunc_outer": lambda x, y, i, j, m, a, v: (np.multiply.outer(v, v), np.add.outer(v, 2.0)),
    "where_true_kw": lambda x, y, i, j, m, a, v: np.add(x, y, where=True),
}

FUNCTIONS = {
    "sum_mean": lambda x, y, i, j, m, a, v: (
        np.sum(x),
        np.sum(x, axis=0),
        np.mean(x, axis=-1),
        np.sum(i, axis=1, keepdims=True),
        np.mean(i),
    ),
    "max_min_prod": lambda x, y, i, j, m, a, v: (
        np.max(x, axis=1),
        np.min(x, axis=(0, 1)),
        np.amax(i),
        np.amin(x, axis=0, keepdims=True),
        np.prod(y, axis=1),
        np.prod(j, axis=0),
    ),
    "var_std": lambda x, y, i, j, m, a, v: (
        np.var(x),
        np.var(x, axis=0, ddof=1),
        np.std(x, axis=1, keepdims=True),
        np.std(y, correction=1),
    ),
    "any_all": lambda x, y, i, j, m, a, v: (
        np.any(m),
        np.all(m, axis=0),
        np.any(x > 1, axis=1),
        np.all(i, axis=1, keepdims=True),
    ),
    "sum_dtype_initial": lambda x, y, i, j, m, a, v: (
        np.sum(m, dtype=np.int16),
        np.sum(x, initial=1.5),
        np.max(x, axis=0, initial=0.5),
        np.mean(i, dtype=np.float32),
    ),
    "argmax_argmin": lambda x, y, i, j, m, a, v: (
        np.argmax(x),
        np.argmax(x, axis=0),
        np.argmin(i, axis=1),
        np.argmin(x, axis=1, keepdims=True),
        np.argmax(m, axis=0),
    ),
    "count_nonzero": lambda x, y, i, j, m, a, v: (np.count_nonzero(m), np.count_nonzero(i, axis=0)),
    "dot": lambda x, y, i, j, m, a, v: (
        np.dot(x, a),
        np.dot(v, v),
        np.dot(x, v),
        np.dot(x, 2.0),
        np.dot(x.reshape(2, 2, 6), np.stack([a, 2 * a])),
    ),
    "tensordot_inner_outer": lambda x, y, i, j, m, a, v: (
        np.tensordot(x, y, axes=2),
        np.tensordot(x, a, axes=1),
        np.tensordot(x.reshape(4, 2, 3), a.reshape(3, 2, 5), axes=([2, 1], [0, 1])),
        np.inner(x, y),
        np.inner(v, v),
        np.outer(v, x[0]),
    ),
    "transpose_family": lambda x, y, i, j, m, a, v: (
        np.transpose(x),
        np.transpose(x.reshape(2, 2, 6), (1, 2, 0)),
        np.swapaxes(x.reshape(2, 2, 6), 0, 2),
        np.moveaxis(x.reshape(2, 2, 6), 0, -1),
        np.moveaxis(x.reshape(2, 2, 6), [0, 1], [2, 0]),
        np.permute_dims(x, (1, 0)),
        np.matrix_transpose(x),
    ),
    "reshape_family": lambda x, y, i, j, m, a, v: (
        np.reshape(x, (3, 8)),
        np.reshape(x, -1),
        np.ravel(x),
        np.expand_dims(x, (0, 2)),
        np.squeeze(x.reshape(1, 4, 1, 6)),
        np.squeeze(x.reshape(1, 4, 1, 6), axis=2),
        np.atleast_1d(x[0, 0]),
        np.atleast_2d(v),
        np.atleast_3d(x),
    ),
    "broadcast": lambda x, y, i, j, m, a, v: (np.broadcast_to(v, (4, 6)), *np.broadcast_arrays(x[:, :1], v)),
    "concatenate_stack": lambda x, y, i, j, m, a, v: (
        np.concatenate([x, y], axis=1),
        np.concatenate([x, i]),
        np.concatenate((x, y), axis=None),
        np.stack([x, y], axis=1),
        np.stack([v, v, v], axis=-1),
        np.hstack([x, y]),
        np.vstack([v, v]),
        np.concat([x, x], axis=0),
    ),
    "split": lambda x, y, i, j, m, a, v: (
        *np.split(x, 2),
        *np.split(x, [1, 4], axis=1),
        *np.array_split(x, 4, axis=1),
        *np.hsplit(x, 3),
        *np.vsplit(x, 2),
    ),
    "where_clip": lambda x, y, i, j, m, a, v: (
        np.where(m, x, y),
        np.where(x > 0, x, 0.0),
        np.where(m, 1.0, -1.0),
        np.where(i, j, 0),
        np.clip(x, -1, 1),
        np.clip(x, a_min=None, a_max=0.5),
        np.clip(i, 2, 5),
        np.clip(x, min=-0.5, max=y),
    ),
    "like": lambda x, y, i, j, m, a, v: (
        np.full_like(x, 2.5),
        np.zeros_like(i),
        np.ones_like(x, dtype=np.int16),
        np.full_like(i, 1.7),
        np.full_like(x, 3, shape=(2, 3)),
        np.full_like(x, y),
    ),
    "tril_triu": lambda x, y, i, j, m, a, v: (
        np.tril(x),
        np.triu(x, 1),
        np.tril(i, -2),
        np.triu(x.reshape(2, 2, 6), -1),
        np.tril(v),
        np.triu(m, 2),
    ),
    "take": lambda x, y, i, j, m, a, v: (
        np.take(x, [0, 2, 3], axis=0),
        np.take(x, 5),
        np.take(x, [[5, 4], [0, 0]], axis=1),
        np.take(x, [7, -1], axis=1, mode="wrap"),
        np.take(x, [-3, 9], axis=1, mode="clip"),
        np.take(x, [1, 3, 5, 0, 0, 0, -1]),
    ),
    "astype": lambda x, y, i, j, m, a, v: (
        x.astype(np.int32),
        np.astype(i, np.float16),
        (x * 50).astype(np.int8),
        m.astype(np.float32),
        x.astype(np.float64),
        i.astype(int),
        x.astype("float16"),
    ),
    "repeat_tile": lambda x, y, i, j, m, a, v: (
        np.repeat(x, 2, axis=0),
        np.repeat(v, 3),
        np.repeat(x, [1, 0, 2, 1], axis=0),
        np.tile(v, 2),
        np.tile(x, (2, 1, 3)),
    ),
    "flip_roll": lambda x, y, i, j, m, a, v: (
        np.flip(x),
        np.flip(x, axis=1),
        np.roll(x, 2),
        np.roll(x, -1, axis=0),
        np.roll(x, (1, 2), (0, 1)),
    ),
    "pad_diff": lambda x, y, i, j, m, a, v: (
        np.pad(x, 1),
        np.pad(x, ((0, 1), (2, 0)), constant_values=-1.5),
        np.diff(x),
        np.diff(x, n=2, axis=0),
        np.diff(m, axis=1),
        np.diff(v, prepend=0.0, append=v[:2]),
    ),
    "round": lambda x, y, i, j, m, a, v: (
        np.round(x * 4),
        np.round(x, 1),
        np.around(x * 100, -1),
        np.round(i),
        np.round(m),
    ),
    "copy": lambda x, y, i, j, m, a, v: np.copy(x) + 1,
    "shape_queries": lambda x, y, i, j, m, a, v: (
        x * (np.shape(x)[1] + np.ndim(x) + np.size(x) + np.size(x, 0) + len(x))
    ),
}

METHODS = {
    "reductions": lambda x, y, i, j, m, a, v: (
        x.sum(),
        x.mean(axis=0),
        x.max(axis=-1, keepdims=True),
        x.min(),
        y.prod(axis=1),
        x.var(ddof=1),
        x.std(axis=0),
        m.any(),
        m.all(axis=1),
        x.argmax(),
        i.argmin(axis=0),
    ),
    "shape": lambda x, y, i, j, m, a, v: (
        x.T,
        x.mT,
        x.transpose(),
        x.reshape(2, 12),
        x.reshape((12, 2)),
        x.reshape(-1, 3),
        x.ravel(),
        x.flatten(),
        x.reshape(1, 4, 6).squeeze(0),
        x.reshape(2, 2, 6).swapaxes(0, 1),
        x.reshape(2, 2, 6).transpose(2, 0, 1),
        x.reshape(2, 2, 6).transpose((1, 0, 2)),
    ),
    "misc": lambda x, y, i, j, m, a, v: (
        x.clip(-1, 1),
        x.copy(),
        x.take([1, 0], axis=1),
        x.repeat(2, axis=1),
        x.dot(a),
        x.round(1),
        i.astype(np.float32),
        abs(x),
        -x,
        +x,
    ),
    "properties": lambda x, y, i, j, m, a, v: (
        x * (x.size + x.ndim + x.shape[0] + x.nbytes // x.itemsize) + (x.dtype.kind == "f")
    ),
    "iteration": lambda x, y, i, j, m, a, v: sum(row * k for k, row in enumerate(x)),
    "unpack": lambda x, y, i, j, m, a, v: (lambda r0, r1, r2, r3: r0 - r3)(*x),
}

TABLE = {
    **{f"ufunc-{k}": f for k, f in UFUNCS.items()},
    **{f"fn-{k}": f for k, f in FUNCTIONS.items()},
    **{f"method-{k}": f for k, f in METHODS.items()},
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_numpy_call_traces_to_numpys_answer(name):
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        check_against_numpy(TABLE[name], ARGS)


SPECIAL = np.array(
    [
        0.5,
        1.5,
        2.5,
        -0.5,
        -2.5,
        3.5,
        np.inf,
        -np.inf,
        np.nan,
        -1.0,
        0.0,
        -0.0,
        1e-30,
        -1e-7,
        1e-7,
        1e-4,
        100.0,
        -100.0,
        3e38,
        2.0**23 + 1,
    ],
    np.float32,
)
COMPOSED = {
    "rint": np.rint,
    "round": np.round,
    "round_2": lambda s: np.round(s[:-2], 2),
    "trunc": np.trunc,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "log2": np.log2,
    "exp2": lambda s: np.exp2(np.minimum(s, 100)),
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "logaddexp": lambda s: np.logaddexp(s, s[::-1]),
    "logaddexp_same": lambda s: np.logaddexp(s, s),
    "fmax": lambda s: np.fmax(s, s[::-1]),
    "fmin": lambda s: np.fmin(s[::-1], s),
    "argmax_nan": np.argmax,
    "argmin": np.argmin,
}


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_ufuncs_on_special_values(name):
    """Functions built from several tensor ops keep NumPy's answers on ties, infinities, NaN,
    signed zeros and huge or tiny arguments (3e38 * 100 would overflow f32, so round_2 leaves
    out the last two values)."""
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        check_against_numpy(COMPOSED[name], (SPECIAL,))


@pytest.mark.parametrize("fn", [np.log1p, np.expm1])
def test_log1p_expm1_keep_relative_accuracy_near_zero(fn):
    """Near 0 the result is tiny, so the check is relative: within 4 f32 ulps (2.4e-7)."""
    import nkigen_lite as nk

    s = np.array([1e-30, -1e-7, 1e-7, 3e-5, -2e-3, 1e-2], np.float32)
    g = nk.trace(fn).trace(s)
    got = nk.run(g, {g.input_names[0]: s})["y"].astype(np.float64)
    ref = fn(s.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=2.4e-7, atol=0)


@pytest.mark.parametrize(
    "fn",
    [
        lambda s: np.logaddexp(s, s),
        lambda s: np.logaddexp(s, s[::-1]),
        np.log2,
        np.log10,
        np.exp2,
    ],
    ids=["logaddexp_same", "logaddexp", "log2", "log10", "exp2"],
)
def test_composed_ufuncs_exact_in_the_float64_oracle(fn):
    """Regression (found by the thorough profile): the float64 oracle of a composed ufunc must
    match NumPy's float64 result to float64 accuracy (1e-13 relative): a helper constant such as
    ln 2 is computed in the graph, not declared as an f32 constant (which the oracle rounds,
    an error of ~3e-8)."""
    import nkigen_lite as nk

    s = np.array([-3.5, -0.6964857, -1e-3, 0.0, 0.25, 1.0, 2.75, 7.0], np.float32)
    g = nk.trace(fn).trace(s)
    with np.errstate(all="ignore"):  # log2 / log10 of the negative values are NaN on both sides
        got = nk.run(g, {g.input_names[0]: s}, mode="float64")["y"]
        ref = fn(s.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-300)


def test_clip_of_unsigned_by_a_bound_beyond_its_range_is_numpys():
    """np.clip(u8, -2, 1000) is a no-op in NumPy (a Python int bound that clips nothing may lie
    outside the dtype); a bound beyond the range on the side it clips is still an error."""
    u = np.array([0, 1, 200, 255], np.uint8)
    for fn in (lambda x: np.clip(x, -2, 1000), lambda x: np.clip(x, -2, 7), lambda x: np.clip(x, 3, 300)):
        g = check_against_numpy(fn, (u,))
        np.testing.assert_array_equal(nk.compile(g).run({"x": u})["y"], fn(u))
    with pytest.raises(nk.BuildError, match="-1 is out of bounds for uint8"):
        nk.trace(lambda x: np.clip(x, 0, -1)).trace(u)


@pytest.mark.parametrize(
    "fn", [np.round, np.rint, lambda x: 1 / np.round(x)], ids=["round", "rint", "1/round"]
)
def test_rounding_to_zero_keeps_the_sign_of_x(fn):
    """np.round(-0.25) is -0.0 (so 1 / it is -inf): the zero result of a negative x keeps its
    sign on the tensor interpreter, the NKI interpreter and the simulator (before: +0.0, and
    x / np.round(y) gave +inf). Exact, signs compared too."""
    x = np.array([-0.25, -0.5, -0.0, 0.0, 0.25, 0.5, -1.5, 2.5, -0.75, np.nan, -np.inf], np.float32)
    with np.errstate(divide="ignore"):
        want = fn(x)
    g = nk.trace(fn).trace(x)
    k = nk.compile(g)
    feed = {g.input_names[0]: x}
    for got in (nk.run(g, feed)["y"], k.run(feed)["y"], nk.simulate(k, feed)["y"]):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
