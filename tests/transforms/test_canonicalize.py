"""canonicalize: rule set properties, fixed point, determinism, folding limits, workloads."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.passes import PassContext, get_pass
from nkigen_lite.transforms import CanonicalizeCounts, canonicalize
from nkigen_lite.transforms.canonical import PATTERNS
from nkigen_lite.transforms.canonical.cse import cse
from nkigen_lite.transforms.canonical.folding import MAX_EVAL_ELEMENTS
from nkigen_lite.workloads import get_workload

from .helpers import assert_same_semantics, copy_graph


def test_every_rule_states_its_identity():
    for p in PATTERNS:
        doc = type(p).__doc__ or ""
        assert "→" in doc.splitlines()[0], f"{type(p).__name__}: first doc line must be 'lhs → rhs'"


def _ops(g):
    return [op.name for op in g.ops]


def test_canonicalize_is_registered_and_records_what_fired():
    b = nk.Builder("g")
    x = b.add_input("x", (4,))
    b.set_outputs({"y": 1 / b.sqrt(x)})
    ctx = PassContext()
    get_pass("canonicalize").run(b.graph, ctx)
    assert ctx.get(CanonicalizeCounts) == {"DivOneToReciprocal": 1, "ReciprocalSqrtToRsqrt": 1}
    assert _ops(b.graph) == ["tensor.rsqrt", "return"]


def test_fixed_point_and_determinism():
    g = get_workload("swiglu_mlp").graph()
    a, b = copy_graph(g), copy_graph(g)
    canonicalize(a)
    canonicalize(b)
    assert str(a) == str(b)
    assert canonicalize(a) == {}  # nothing left to do
    assert "tensor.silu" in str(a) and "tensor.exp" not in str(a)


def test_rmsnorm_uses_rsqrt_and_keeps_semantics():
    g = get_workload("rmsnorm").graph(shape=(8, 32))
    before = copy_graph(g)
    canonicalize(g)
    assert "tensor.rsqrt" in _ops(g) and "tensor.sqrt" not in _ops(g)
    feed = {
        "x": np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32),
        "w": np.random.default_rng(2).standard_normal(32).astype(np.float32),
    }
    assert_same_semantics(before, g, feed, f64_tol=(1e-12, 1e-12))


def test_no_rule_changes_a_type():
    # x * 1.0 (int32 x) is float32; x + 0 with a bigger 0 broadcasts; 1 / x for int x is a float
    b = nk.Builder("g")
    x = b.add_input("x", (4,), nk.int32)
    y = b.add_input("y", (4,), nk.float32)
    b.set_outputs(
        {"a": x * np.float32(1.0), "b": y + b.zeros((3, 4)), "c": 1.0 / x, "d": b.cast(x, nk.int32) * 1}
    )
    g = b.graph
    types = {n: v.type for n, v in g.outputs.items()}
    canonicalize(g)
    g.verify()
    assert {n: v.type for n, v in g.outputs.items()} == types
    assert g.outputs["d"] is g.inputs[0]
    assert _ops(g).count("tensor.mul") == 1 and "tensor.add" in _ops(g)


def test_cse_distinguishes_attributes_types_and_signed_zeros():
    b = nk.Builder("g")
    x = b.add_input("x", (4, 4))
    outs = {
        "a": b.sum(x, axis=0),
        "b": b.sum(x, axis=1),
        "c": b.sum(x, axis=0),
        "d": b.full((), 1.0, nk.float32),
        "e": b.full((), 1.0, nk.float16),
        "f": b.full((), 0.0),
        "g": b.full((), -0.0),
        "h": b.full((), 0.0),
    }
    b.set_outputs(outs)
    g = b.graph
    assert cse(g) == 2
    o = g.outputs
    assert o["a"] is o["c"] and o["f"] is o["h"]
    assert len({id(o[k]) for k in "abdefg"}) == 6


def test_cse_of_a_graph_without_duplicates_is_a_no_op():
    g = get_workload("softmax").graph()
    text = str(g)
    assert cse(g) == 0 and str(g) == text


def test_folding_skips_large_evaluations_and_runtime_errors():
    n = 512
    assert n * n > MAX_EVAL_ELEMENTS
    b = nk.Builder("g")
    x = b.add_input("x", (n,))
    big = b.sum(b.full((n, n), 1.0), axis=0)  # too big to evaluate at compile time
    ipow = b.pow(b.full((4,), 2, nk.int32), b.full((4,), -1, nk.int32))  # NumPy raises
    b.set_outputs({"y": x + big, "z": ipow})
    g = b.graph
    canonicalize(g)
    assert "tensor.reduce" in _ops(g) and "tensor.pow" in _ops(g)


def test_folding_a_large_dense_constant_does_not_grow_the_ir():
    b = nk.Builder("g")
    x = b.add_input("x", (2000,))
    k = b.constant(np.arange(2000, dtype=np.float32))
    b.set_outputs({"y": x * (k + 1.0)})
    g = b.graph
    before = copy_graph(g)
    canonicalize(g)
    assert _ops(g) == ["tensor.constant", "tensor.mul", "return"]
    feed = {"x": np.random.default_rng(0).standard_normal(2000).astype(np.float32)}
    assert_same_semantics(before, g, feed)


@pytest.mark.parametrize("name", ["softmax", "layernorm", "rmsnorm", "attention", "swiglu_mlp", "rope"])
def test_workloads_keep_their_semantics(name):
    w = get_workload(name)
    small = {
        "softmax": {"shape": (16, 32)},
        "layernorm": {"shape": (8, 64)},
        "rmsnorm": {"shape": (8, 64)},
        "attention": {"seq": 16, "d": 8},
        "swiglu_mlp": {"tokens": 8, "hidden": 16, "inter": 32},
        "rope": {"seq": 8, "heads": 2, "d": 16},
    }[name]
    g = w.graph(**small)
    before = copy_graph(g)
    canonicalize(g)
    g.verify()
    assert_same_semantics(before, g, w.inputs(g, seed=3), f64_tol=(1e-12, 1e-12))


def test_zero_terms_keep_numpy_signed_zeros_end_to_end():
    """x + 0.0, 0.0 + x, x - (-0.0) and 0.0 - x give NumPy's bits (signs of zeros included)
    after the full compile, on the NKI interpreter; x - 0.0 and x + (-0.0) stay exact folds."""
    x = np.array([-0.0, 0.0, -1.5, 2.0, np.inf, -np.inf, np.nan, 1e-45], dtype=np.float32)
    cases = {
        "add": lambda v: v + np.float32(0.0),
        "radd": lambda v: np.float32(0.0) + v,
        "sub_negzero": lambda v: v - np.float32(-0.0),
        "zero_sub": lambda v: np.float32(0.0) - v,
        "add_negzero": lambda v: v + np.float32(-0.0),
        "sub_zero": lambda v: v - np.float32(0.0),
    }
    for name, f in cases.items():
        b = nk.Builder(name)
        xv = b.add_input("x", x.shape)
        b.set_outputs({"y": f(xv)})
        got = nk.compile(b.graph).run({"x": x})["y"]
        want = f(x)
        assert got.dtype == want.dtype, name
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), f"{name}: got {got}, NumPy {want}"
