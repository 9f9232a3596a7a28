"""The facts on every tensor op class: present, consistent, anchored to independent values.

The ``examples`` of elementwise ops are exact values written with Python's ``math`` module (not
NumPy, not the package), so a wrong ``reference`` function fails here even though the value
tests compare the interpreter against the same function. The docs table is the classes'.
"""

import inspect
import math

import numpy as np
import pytest

import nkigen_lite as nk
import nkigen_lite.transforms  # noqa: F401  (registers tensor.layout_convert)
from nkigen_lite.tensor import op_docs
from nkigen_lite.tensor import ops as T
from nkigen_lite.testing import assert_close

ELEMENTWISE = [*T.UNARY_OPS.values(), *T.BINARY_OPS.values()]
FAMILIES = ("act", "alu", "reduce", "composite", "collective", "indexed", "ordering")


def _where(cls) -> str:
    return f"{cls.name} ({inspect.getsourcefile(cls)})"


@pytest.mark.parametrize("cls", list(T.TENSOR_OPS.values()), ids=lambda c: c.name)
def test_every_tensor_op_carries_its_facts(cls):
    assert cls.summary(), f"{_where(cls)}: needs a docstring (its first line is the op's doc)"
    assert callable(cls.reference), f"{_where(cls)}: needs a NumPy `reference` function"
    assert cls.numpy, f"{_where(cls)}: needs `numpy`, its NumPy semantics in words"
    assert cls.dtype_doc, f"{_where(cls)}: needs `dtype_doc`, its dtype rule in words"
    if cls.needs is not None:
        assert cls.needs.family in FAMILIES, f"{_where(cls)}: unknown family in {cls.needs}"


@pytest.mark.parametrize("cls", ELEMENTWISE, ids=lambda c: c.name)
def test_elementwise_ops_have_builder_names_needs_and_examples(cls):
    assert cls.builder_names[0] == cls.short_name(), _where(cls)
    assert cls.needs is not None, f"{_where(cls)}: an elementwise op needs a capability"
    assert cls.examples, f"{_where(cls)}: give `examples` (exact values, math module)"
    for args, _ in cls.examples:
        arity = 1 if issubclass(cls, T.UnaryOp) else 2
        assert len(args) == arity, f"{_where(cls)}: example {args} has the wrong arity"


def _dtype_of(v) -> nk.DType:
    return nk.bool_ if isinstance(v, bool) else nk.int32 if isinstance(v, int) else nk.float32


def _check(got, want, what):
    if isinstance(want, bool):
        assert got.dtype == np.bool_ and bool(got) == want, what
    elif isinstance(want, int):
        assert got == want, what
    else:
        assert math.isclose(float(got), want, rel_tol=1e-12, abs_tol=1e-15), f"{what}: {got}"


@pytest.mark.parametrize("cls", ELEMENTWISE, ids=lambda c: c.name)
def test_examples_hold_for_the_reference_and_both_interpreter_modes(cls):
    for args, want in cls.examples:
        what = f"{cls.name}{args} = {want}"
        dts = [_dtype_of(a) for a in args]
        arrays = [np.asarray(a, np.float64 if d.is_float else d.np_dtype) for a, d in zip(args, dts)]
        with np.errstate(all="ignore"):
            _check(np.asarray(cls.reference(*arrays)), want, f"reference: {what}")
        b = nk.Builder("example")
        xs = [b.add_input(f"x{i}", (), d) for i, d in enumerate(dts)]
        b.set_outputs({"y": b.emit(cls, xs)})
        ins = {f"x{i}": np.asarray(a, d.np_dtype) for i, (a, d) in enumerate(zip(args, dts))}
        stored = [
            np.asarray(a, np.float64 if a.dtype.kind == "f" else a.dtype) for a in ins.values()
        ]  # the inputs as the graph holds them (f32-rounded)
        with np.errstate(all="ignore"):
            exact = np.asarray(cls.reference(*stored))
        got64 = nk.run(b.graph, ins, mode="float64")["y"]
        _check(got64, exact.item() if isinstance(want, float) else want, f"float64 mode: {what}")
        got = nk.run(b.graph, ins)["y"]
        if isinstance(want, float):  # inputs are f32-exact or rounded once: f32 tolerance
            assert_close(got, np.float64(want), nk.float32, what=f"faithful: {what}")
        else:
            _check(got, want, f"faithful: {what}")


def test_erf_based_references_match_math_erf_on_a_grid():
    x = np.linspace(-6.0, 6.0, 241)
    erf = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(T.ErfOp.reference(x), erf, rtol=1e-13, atol=1e-15)
    gelu = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2.0))) for v in x])
    # 1 + erf(x) cancels for x << 0 in both formulas: relative 1e-8 there
    np.testing.assert_allclose(T.GeluOp.reference(x), gelu, rtol=1e-8, atol=1e-15)


@pytest.mark.parametrize("cls", [c for c in ELEMENTWISE if c.traced_from], ids=lambda c: c.name)
def test_traced_ufuncs_build_their_op(cls):
    for ufunc in cls.traced_from:
        arity = 1 if issubclass(cls, T.UnaryOp) else 2
        dt = (
            np.int32
            if cls.short_name().startswith("bitwise")
            else (np.bool_ if cls.short_name().startswith("logical") else np.float32)
        )
        args = [np.ones((2, 3), dt) for _ in range(arity)]
        g = nk.trace(lambda *xs, u=ufunc: u(*xs)).trace(*args)
        assert any(type(op) is cls for op in g.walk()), f"np.{ufunc.__name__} -> {cls.name}"


def test_the_docs_op_table_is_generated_from_the_classes():
    text = op_docs.DOC.read_text()
    assert op_docs.BEGIN in text and op_docs.END in text, "docs/tensor_ops.md lost its markers"
    assert op_docs.with_table(text, op_docs.op_table()) == text, (
        "docs/tensor_ops.md's op table differs from the op classes: run "
        "`uv run python -m nkigen_lite.tensor.op_docs`"
    )
    for cls in T.ALL_TENSOR_OPS:
        assert f"`{cls.name}`" in text, cls.name


def test_reduce_capability_depends_on_kind_and_keepdims():
    b = nk.Builder("r")
    x = b.add_input("x", (4, 8), nk.float32)
    sum_keep = b.sum(x, axis=1, keepdims=True).owner
    mean_keep = b.mean(x, axis=1, keepdims=True).owner
    sum_drop = b.sum(x, axis=1).owner
    assert sum_keep.capability() == T.Needs("reduce", "add")
    assert mean_keep.capability() == T.Needs("reduce", None)
    assert sum_drop.capability() == T.Needs("reduce", None)
