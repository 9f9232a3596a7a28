"""Property tests: random NumPy expressions and random index keys, traced and evaluated.

Elementwise trees run in the interpreter's float64 oracle mode and must equal a float64
evaluation of the same program (tolerance 1e-9 relative to max(|ref|, 1); integers exact), with
NumPy's result dtype (64-bit narrowed). The reference (``reference``) evaluates the tree on
float64 copies of the inputs, but a constant sub-tree (which NumPy folds to a Python scalar) is
rounded to the dtype that weak scalar takes next to its array operand in the native program
(NEP 50, 64-bit narrowed): ``x_f32 + np.cos(1.0)`` adds ``float32(cos(1))``, as NumPy does.

Index keys (ints, slices with any step, None, ...) must select exactly what NumPy selects, for
reads and for writes."""

import warnings

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.testing import assert_close

from .helpers import narrow, to64

UNARY = [
    np.negative,
    np.abs,
    np.square,
    np.tanh,
    np.sin,
    np.cos,
    np.arctan,
    np.floor,
    np.ceil,
    np.sign,
    np.trunc,
    np.rint,
    np.exp,
    lambda t: np.log1p(np.abs(t)),
    lambda t: np.expm1(np.tanh(t)),
    lambda t: np.sqrt(np.abs(t)),
    lambda t: np.power(t, 3),
    lambda t: t**2,
]
BINARY = [
    np.add,
    np.subtract,
    np.multiply,
    np.maximum,
    np.minimum,
    np.fmax,
    np.fmin,
    np.true_divide,
    np.logaddexp,
    np.floor_divide,
    np.remainder,
]
COMPARE = [np.less, np.greater_equal, np.equal]
LEAVES = st.sampled_from(["x", "y", "i"]) | st.floats(-4, 4, allow_nan=False, width=32) | st.integers(-6, 6)


def _trees():
    def extend(children):
        return (
            st.tuples(st.just("u"), st.integers(0, len(UNARY) - 1), children)
            | st.tuples(st.just("b"), st.integers(0, len(BINARY) - 1), children, children)
            | st.tuples(
                st.just("w"),
                st.integers(0, len(COMPARE) - 1),
                st.sampled_from(["x", "y", "i"]),
                LEAVES,
                children,
                children,
            )
        )

    return st.recursive(LEAVES, extend, max_leaves=8)


class Unrepresentable(Exception):
    """A constant sub-expression that no int32 / float can hold."""


def evaluate(tree, env):
    """The expression on ``env``'s arrays (NumPy arrays or traced arrays alike). A sub-expression
    of constants only stays a (weak) Python scalar, so the graph holds it exactly."""
    if isinstance(tree, str):
        return env[tree]
    if not isinstance(tree, tuple):
        return tree
    kind = tree[0]
    if kind == "u":
        r = UNARY[tree[1]](evaluate(tree[2], env))
    elif kind == "b":
        r = BINARY[tree[1]](evaluate(tree[2], env), evaluate(tree[3], env))
    else:
        cond = COMPARE[tree[1]](env[tree[2]], evaluate(tree[3], env))
        r = np.where(cond, evaluate(tree[4], env), evaluate(tree[5], env))
    if isinstance(r, np.generic):
        r = r.item()
        if isinstance(r, int) and not -(2**31) <= r < 2**31 or isinstance(r, float) and not np.isfinite(r):
            raise Unrepresentable(r)
    return r


def _is_scalar(v) -> bool:
    return isinstance(v, (bool, int, float))


def _weak(scalar, ref_scalar, native_other):
    """``ref_scalar`` (the float64 evaluation of a constant sub-tree) rounded to the dtype the
    weak Python scalar ``scalar`` takes next to ``native_other`` in the native program: NumPy's
    result dtype (NEP 50), 64-bit narrowed to 32-bit as the project does. Unchanged when it
    meets no array (two constants fold in Python)."""
    if not _is_scalar(scalar) or _is_scalar(native_other):
        return ref_scalar
    dt = narrow(np.result_type(native_other, scalar))
    return np.asarray(ref_scalar).astype(dt).item()


def _checked(r):
    if isinstance(r, np.generic):
        r = r.item()
        if isinstance(r, int) and not -(2**31) <= r < 2**31 or isinstance(r, float) and not np.isfinite(r):
            raise Unrepresentable(r)
    return r


def reference(tree, native, ref):
    """(native value, float64 reference value) of ``tree``: ``native`` evaluates it on the
    inputs' own dtypes (for the dtype each weak scalar takes), ``ref`` on float64 copies, with
    every constant sub-tree rounded as NumPy rounds it where it meets an array (``_weak``).
    Independent of the traced graph: plain NumPy on both sides."""
    if isinstance(tree, str):
        return native[tree], ref[tree]
    if not isinstance(tree, tuple):
        return tree, tree
    kind = tree[0]
    if kind == "u":
        n, r = reference(tree[2], native, ref)
        fn = UNARY[tree[1]]
        return _checked(fn(n)), _checked(fn(r))
    if kind == "b":
        (na, ra), (nb, rb) = reference(tree[2], native, ref), reference(tree[3], native, ref)
        ra, rb = _weak(na, ra, nb), _weak(nb, rb, na)
        fn = BINARY[tree[1]]
        return _checked(fn(na, nb)), _checked(fn(ra, rb))
    cmp = COMPARE[tree[1]]
    nl, rl = native[tree[2]], ref[tree[2]]
    nc, rc = reference(tree[3], native, ref)
    rc = _weak(nc, rc, nl)
    (na, ra), (nb, rb) = reference(tree[4], native, ref), reference(tree[5], native, ref)
    if _is_scalar(na) and _is_scalar(nb):  # np.where(cond, c1, c2): both take their common dtype
        dt = narrow(np.result_type(na, nb))
        ra, rb = np.asarray(ra).astype(dt).item(), np.asarray(rb).astype(dt).item()
    else:
        ra, rb = _weak(na, ra, nb), _weak(nb, rb, na)
    return (
        _checked(np.where(cmp(nl, nc), na, nb)),
        _checked(np.where(cmp(rl, rc), ra, rb)),
    )


rng = np.random.default_rng(5)
INPUTS = {
    "x": rng.uniform(-3, 3, (3, 4)).astype(np.float32),
    "y": rng.uniform(-3, 3, (4,)).astype(np.float32),
    "i": rng.integers(-5, 6, (3, 1)).astype(np.int32),
}


@given(_trees())
def test_random_elementwise_expressions_match_numpy(tree):
    def fn(x, y, i):
        return evaluate(tree, {"x": x, "y": y, "i": i})

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            native = np.asarray(fn(**INPUTS))
        except Unrepresentable:
            assume(False)
        ref = np.asarray(reference(tree, INPUTS, {k: to64(v) for k, v in INPUTS.items()})[1])
        assume(native.ndim > 0)  # a tree of constants only has nothing to trace
        g = nk.trace(fn).trace(**INPUTS)  # constant sub-trees are computed by NumPy
    out = nk.run(g, INPUTS, mode="float64")["y"]
    assert g.outputs["y"].dtype.np_dtype == narrow(native.dtype), (tree, native.dtype)
    if native.dtype.kind == "f":
        assert_close(out, ref, "float64", what=str(tree))
    else:
        np.testing.assert_array_equal(out, native, err_msg=str(tree))


def _index_items():
    return st.one_of(
        st.integers(-3, 2),
        st.builds(
            slice,
            st.none() | st.integers(-5, 5),
            st.none() | st.integers(-5, 5),
            st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3]),
        ),
        st.none(),
    )


@st.composite
def keys(draw):
    items = draw(st.lists(_index_items(), min_size=0, max_size=3))
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    return tuple(items)


A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


@given(keys())
def test_random_basic_index_reads_match_numpy(key):
    expected = A[key]
    g = nk.trace(lambda a: a[key]).trace(A)
    got = nk.run(g, {"a": A})["y"]
    np.testing.assert_array_equal(got, expected, err_msg=repr(key))


@given(keys())
def test_random_unit_step_writes_match_numpy(key):
    key = tuple(
        slice(k.start, k.stop, 1 if k.step is None or k.step > 0 else -1) if isinstance(k, slice) else k
        for k in key
    )

    def write(a):
        out = a.copy()
        out[key] = -out[key] - 100
        return out

    g = nk.trace(write).trace(A)
    np.testing.assert_array_equal(nk.run(g, {"a": A})["y"], write(A), err_msg=repr(key))


REDUCTIONS = ["sum", "mean", "max", "min", "prod", "var", "std", "any", "all"]
B = np.random.default_rng(9).uniform(-2, 2, (2, 3, 4)).astype(np.float32)
BI = np.random.default_rng(9).integers(-3, 4, (2, 3, 4)).astype(np.int32)


@st.composite
def reduction_calls(draw):
    kind = draw(st.sampled_from(REDUCTIONS + ["argmax", "argmin"]))
    if kind.startswith("arg"):
        axis = draw(st.none() | st.integers(-3, 2))
    else:
        axis = draw(
            st.none()
            | st.integers(-3, 2)
            | st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True).map(tuple)
        )
    kw = {"keepdims": draw(st.booleans())}
    if kind in ("var", "std"):
        kw["ddof"] = draw(st.integers(0, 1))
    return kind, axis, kw, draw(st.booleans())


@given(reduction_calls())
def test_random_reductions_match_numpy(call):
    """np.<kind>(a, axis, keepdims, ddof) on f32 or i32 data: NumPy's dtype (narrowed), and its
    values (float64 oracle mode, 1e-9; integers exact)."""
    kind, axis, kw, use_int = call
    data = BI if use_int else B

    def fn(a):
        return getattr(np, kind)(a, axis=axis, **kw)

    native = np.asarray(fn(data))
    g = nk.trace(fn).trace(data)
    out = nk.run(g, {"a": data}, mode="float64")["y"]
    assert g.outputs["y"].dtype.np_dtype == narrow(native.dtype), call
    if native.dtype.kind == "f":
        assert_close(out, np.asarray(fn(to64(data))), "float64", what=str(call))
    else:
        np.testing.assert_array_equal(out, native, err_msg=str(call))
