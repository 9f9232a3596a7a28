"""Composite ops (``nk.define_op``) and the shipped ones (silu, softplus, gelu, softmax,
log_softmax, logsumexp, rms_norm, layer_norm, gelu_tanh), plus ``nk.ops`` on NumPy arrays,
traced arrays and Values.

References are float64 NumPy formulas written here (``REF``), independent of the defining
functions. Tolerances: f32 rtol = atol = 2e-5 against float64 (a few fp32 ops per element
plus one reduction of at most 256 terms, values of order 1-10); bf16 rtol = atol = 3e-2 (inputs
and results rounded to 8 bits).
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T


def _max(x, axis):
    return x.max(axis=axis, keepdims=True)


def _lse(x, axis):
    m = _max(x, axis)
    return np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m


REF = {
    "softmax": lambda x, axis=-1: np.exp(x - _lse(x, axis)),
    "log_softmax": lambda x, axis=-1: x - _lse(x, axis),
    "logsumexp": lambda x, axis=-1, keepdims=False: (
        _lse(x, axis) if keepdims else np.squeeze(_lse(x, axis), axis)
    ),
    "rms_norm": lambda x, axis=-1, eps=1e-6: x / np.sqrt((x**2).mean(axis=axis, keepdims=True) + eps),
    "layer_norm": lambda x, axis=-1, eps=1e-5: (
        (x - x.mean(axis=axis, keepdims=True)) / np.sqrt(x.var(axis=axis, keepdims=True) + eps)
    ),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
}
CASES = [
    ("softmax", {}),
    ("softmax", {"axis": 0}),
    ("log_softmax", {}),
    ("log_softmax", {"axis": 0}),
    ("logsumexp", {}),
    ("logsumexp", {"axis": 0, "keepdims": True}),
    ("rms_norm", {}),
    ("rms_norm", {"eps": 0.5}),
    ("layer_norm", {}),
    ("layer_norm", {"axis": 0, "eps": 1e-3}),
    ("gelu_tanh", {}),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in a.items())}" for n, a in CASES]


def data(shape, seed=0, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def graph(name, attrs, shape=(128, 96), dtype=nk.float32):
    b = nk.Builder(name)
    x = b.add_input("x", shape, dtype)
    b.set_outputs({"y": getattr(b, name)(x, **attrs)})
    return b.graph


def close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol)


def test_the_shipped_composites():
    assert list(T.COMPOSITE_OPS)[:9] == [
        "silu",
        "softplus",
        "gelu",
        "softmax",
        "log_softmax",
        "logsumexp",
        "rms_norm",
        "layer_norm",
        "gelu_tanh",
    ]


@pytest.mark.parametrize("name, attrs", CASES, ids=IDS)
def test_one_op_prints_parses_and_interprets(name, attrs):
    g = graph(name, attrs)
    ops = [op.name for op in g.walk()]
    assert ops.count(f"tensor.{name}") == 1 and len(ops) == 2  # the op and the return
    text = str(g)
    g2 = nk.parse(text)
    assert str(g2) == text
    x = data((128, 96))
    want = REF[name](x.astype(np.float64), **attrs)
    for gg in (g, g2):
        close(nk.run(gg, {"x": x})["y"], want, 2e-5)
    # the float64 mode holds the expansion's constants (eps, 1/N, sqrt(2/pi)) as the f32
    # values they are: a relative 1e-7 apart from the float64 reference
    close(nk.run(g, {"x": x}, mode="float64")["y"], want, 1e-6)


@pytest.mark.parametrize("name, attrs", CASES, ids=IDS)
def test_compiled_kernel_matches_float64(name, attrs):
    x = data((128, 96), seed=1)
    k = nk.compile(graph(name, attrs))
    assert f"tensor.{name}" not in k.ir("decompose")
    close(k.run({"x": x})["y"], REF[name](x.astype(np.float64), **attrs), 2e-5)


@pytest.mark.parametrize("name", ["softmax", "rms_norm", "layer_norm", "logsumexp"])
def test_bf16_computes_in_f32_and_rounds_back(name):
    x = data((128, 64), seed=2, scale=1.0).astype(nk.bfloat16.np_dtype)
    g = graph(name, {}, (128, 64), nk.bfloat16)
    assert g.outputs["y"].type.dtype is nk.bfloat16
    want = REF[name](x.astype(np.float64))
    close(nk.run(g, {"x": x})["y"].astype(np.float32), want, 3e-2)
    close(nk.compile(g).run({"x": x})["y"].astype(np.float32), want, 3e-2)


def test_integer_input_gives_f32():
    b = nk.Builder("i")
    x = b.add_input("x", (4, 8), nk.int32)
    y = b.softmax(x)
    assert y.type.dtype is nk.float32
    b.set_outputs({"y": y})
    xi = np.arange(32, dtype=np.int32).reshape(4, 8) % 5
    close(nk.run(b.graph, {"x": xi})["y"], REF["softmax"](xi.astype(np.float64)), 2e-5)


# ---- nk.ops ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, attrs", CASES, ids=IDS)
def test_nk_ops_on_numpy_arrays(name, attrs):
    x = data((32, 48), seed=3)
    got = getattr(nk.ops, name)(x, **attrs) if name != "gelu_tanh" else nk.ops.gelu(x, approximate="tanh")
    assert got.dtype == np.float32
    close(got, REF[name](x.astype(np.float64), **attrs), 2e-5)


def test_nk_ops_inside_trace_is_one_op_and_compiles():
    @nk.trace
    def block(x, w):
        h = nk.ops.rms_norm(x, eps=1e-5) * w
        return nk.ops.softmax(h @ h.T, axis=-1)

    x, w = data((128, 64), seed=4, scale=1.0), data((64,), seed=5, scale=0.2)
    g = block.trace(x, w)
    names = [op.name for op in g.walk()]
    assert names.count("tensor.rms_norm") == 1 and names.count("tensor.softmax") == 1
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    h = REF["rms_norm"](x64, eps=1e-5) * w64
    want = REF["softmax"](h @ h.T)
    close(block(x, w), want, 2e-5)  # the function, still NumPy
    close(nk.compile(g).run({"x": x, "w": w})["y"], want, 2e-5)


def test_nk_ops_on_builder_values():
    b = nk.Builder("v")
    x = b.add_input("x", (8, 16), nk.float32)
    b.set_outputs({"y": nk.ops.log_softmax(x, axis=0), "z": nk.ops.silu(x)})
    assert [op.name for op in b.graph.walk()][:2] == ["tensor.log_softmax", "tensor.silu"]


def test_activations_silu_softplus_gelu_erf():
    x = data((16, 32), seed=6)
    x64 = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    close(nk.ops.silu(x), x64 / (1 + np.exp(-x64)), 2e-5)
    close(nk.ops.softplus(x), np.logaddexp(0, x64), 2e-5)
    close(nk.ops.gelu(x), 0.5 * x64 * (1 + erf(x64 / math.sqrt(2))), 2e-5)

    @nk.trace
    def acts(x):
        return nk.ops.silu(x) + nk.ops.softplus(x) + nk.ops.gelu(x) + nk.ops.gelu(x, approximate="tanh")

    g = acts.trace(x)
    names = {op.name for op in g.walk()}
    assert {"tensor.silu", "tensor.softplus", "tensor.gelu", "tensor.gelu_tanh"} <= names
    want = (
        x64 / (1 + np.exp(-x64))
        + np.logaddexp(0, x64)
        + 0.5 * x64 * (1 + erf(x64 / math.sqrt(2)))
        + REF["gelu_tanh"](x64)
    )
    close(nk.run(g, {"x": x})["y"], want, 1e-4)


ACTS = {
    "silu": lambda x: x / (1 + np.exp(-x)),
    "softplus": lambda x: np.logaddexp(0, x),
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_composites_are_composites_with_a_native_lowering(name):
    """silu, softplus and gelu are composite ops (one op, defined by their NumPy expansion) and
    unary ops: on trn2 decompose keeps them and each is one ScalarE activation of its name (one
    instruction per tile, as before they were composites); on a target without that function
    decompose inlines the expansion. Both kernels, the NKI simulator and both interpreter modes
    match float64 NumPy (f32: 2e-5; the float64 oracle: 1e-12)."""
    import dataclasses

    cls = T.COMPOSITE_OPS[name]
    assert issubclass(cls, T.CompositeOp) and issubclass(cls, T.UnaryOp) and cls is T.UNARY_OPS[name]
    assert cls.needs == T.Needs("act", name)
    x = data((128, 64), seed=8)
    want = ACTS[name](x.astype(np.float64))
    g = graph(name, {}, (128, 64))
    close(nk.run(g, {"x": x})["y"], want, 2e-5)
    close(nk.run(g, {"x": x}, mode="float64")["y"], want, 1e-12)

    k = nk.compile(g)
    assert f"tensor.{name} " in k.ir("decompose")
    acts = [op.attrs["op"] for op in k.nki.walk() if op.name == "nki.activation"]
    assert acts == [name], acts
    assert f"op=nl.{name}," in k.nki_source()
    assert k.stats().instructions_static == 3  # load, activation, store
    close(k.run({"x": x})["y"], want, 2e-5)

    bare = dataclasses.replace(nk.TRN2, activation_functions=nk.TRN2.activation_functions - {name})
    kb = nk.compile(g, target=bare)
    assert f"tensor.{name} " not in kb.ir("decompose")
    assert all(op.attrs.get("op") != name for op in kb.nki.walk() if op.name == "nki.activation")
    close(kb.run({"x": x})["y"], want, 2e-5)
    close(nk.simulate(kb, {"x": x})["y"], want, 2e-5)


# ---- nk.define_op --------------------------------------------------------------------------------


def _swiglu(x, g, beta=1.0):
    """silu(beta x) * g."""
    return x / (1 + np.exp(-beta * x)) * g


SwigluOp = nk.define_op("swiglu_test", _swiglu)


def test_define_op_with_two_operands_and_an_attribute():
    assert SwigluOp.name == "tensor.swiglu_test" and SwigluOp.summary() == "silu(beta x) * g."
    assert [a.name for a in SwigluOp.attr_spec] == ["beta"] and SwigluOp.operand_names == ("x", "g")
    b = nk.Builder("s")
    x = b.add_input("x", (128, 64), nk.float32)
    gt = b.add_input("g", (64,), nk.float32)
    b.set_outputs({"y": b.swiglu_test(x, gt, beta=2.0)})
    text = str(b.graph)
    assert "tensor.swiglu_test %x, %g {beta = 2.0} : tensor<128x64xf32>" in text
    xv, gv = data((128, 64), seed=7), data((64,), seed=8)
    want = xv.astype(np.float64) / (1 + np.exp(-2.0 * xv.astype(np.float64))) * gv
    close(nk.run(nk.parse(text), {"x": xv, "g": gv})["y"], want, 2e-5)
    close(nk.compile(b.graph).run({"x": xv, "g": gv})["y"], want, 2e-5)
    close(nk.ops.swiglu_test(xv, gv, beta=2.0), want, 2e-5)


def test_define_op_errors():
    with pytest.raises(nk.BuildError, match="tensor.softmax is already defined"):
        nk.define_op("softmax", _swiglu)
    with pytest.raises(nk.BuildError, match="name 'Bad-Name' must be lower_case"):
        nk.define_op("Bad-Name", _swiglu)
    with pytest.raises(nk.BuildError, match=r"attribute 'axes' has a default of type tuple"):
        nk.define_op("bad_attr_test", lambda x, axes=(0,): x)
    with pytest.raises(nk.BuildError, match="parameter 'xs' is variadic positional"):
        nk.define_op("bad_var_test", lambda *xs: xs[0])
    with pytest.raises(nk.BuildError, match="give doc= or a docstring"):
        nk.define_op("bad_doc_test", lambda x: x)
    assert "tensor.bad_attr_test" not in T.TENSOR_OPS


def test_bad_uses_name_the_op():
    b = nk.Builder("e")
    x = b.add_input("x", (4, 8), nk.float32)
    with pytest.raises(
        nk.BuildError, match=r"tensor\.softmax: expanding for operands tensor<4x8xf32>: .*axis"
    ):
        b.softmax(x, axis=5)
    with pytest.raises(nk.BuildError, match=r"tensor\.swiglu_test takes 2 operands \['x', 'g'\], got 1"):
        b.swiglu_test(x)
    with pytest.raises(nk.BuildError, match="unknown composite op 'nope'"):
        b.composite("nope", x)
    with pytest.raises(nk.BuildError, match=r"tensor\.softmax: unknown attributes \['dim'\]"):
        nk.ops.apply("softmax", np.ones((2, 2), np.float32), dim=0)
    with pytest.raises(nk.BuildError, match="approximate must be 'none' or 'tanh'"):
        nk.ops.gelu(np.ones(2, np.float32), approximate="fast")


@pytest.mark.parametrize("name, attrs", CASES, ids=IDS)
def test_nk_ops_on_float64_arrays_stay_float64(name, attrs):
    x = data((16, 24), seed=9).astype(np.float64)
    fn = getattr(nk.ops, name) if name != "gelu_tanh" else (lambda x: nk.ops.gelu(x, approximate="tanh"))
    got = fn(x, **attrs)
    assert got.dtype == np.float64
    close(got, REF[name](x, **attrs), 1e-12)


@st.composite
def composite_cases(draw):
    name = draw(st.sampled_from(sorted(REF)))
    shape = tuple(draw(st.lists(st.sampled_from([1, 3, 17, 64, 130, 200]), min_size=1, max_size=3)))
    attrs = {}
    if name != "gelu_tanh":
        attrs["axis"] = draw(st.integers(-len(shape), len(shape) - 1))
    if name == "logsumexp":
        attrs["keepdims"] = draw(st.booleans())
    dtype = draw(st.sampled_from([nk.float32, nk.bfloat16]))
    return name, shape, attrs, dtype, draw(st.integers(0, 2**16))


@given(composite_cases())
def test_property_compiled_composites_match_float64(case):
    """Random op, shape (1 to 3 dims, sizes off the 128 grid), axis and dtype: the compiled
    kernel on the NKI interpreter against the float64 reference (f32 2e-5, bf16 3e-2)."""
    name, shape, attrs, dtype, seed = case
    b = nk.Builder("p")
    x = b.add_input("x", shape, dtype)
    b.set_outputs({"y": getattr(b, name)(x, **attrs)})
    xv = data(shape, seed=seed, scale=2.0).astype(dtype.np_dtype)
    want = REF[name](xv.astype(np.float64), **attrs)
    tol = 2e-5 if dtype is nk.float32 else 3e-2
    close(nk.compile(b.graph).run({"x": xv})["y"].astype(np.float64), want, tol)
