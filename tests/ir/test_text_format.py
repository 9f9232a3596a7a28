"""Text format: exact print -> parse -> print, every dtype, dense constants and special floats,
naming rules, defaults omitted, determinism."""

import math

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.attrs import quote_string
from nkigen_lite.ir.lexer import Lexer

SOFTMAX = """\
graph @softmax(%x: tensor<256x512xf32>) {
  %max = tensor.reduce %x {axes = [1], kind = max, keepdims = true} : tensor<256x1xf32>
  %sub = tensor.sub %x, %max : tensor<256x512xf32>
  %exp = tensor.exp %sub : tensor<256x512xf32>
  %sum = tensor.reduce %exp {axes = [1], kind = sum, keepdims = true} : tensor<256x1xf32>
  %div = tensor.div %exp, %sum : tensor<256x512xf32>
  return y = %div
}
"""


def _roundtrip(text):
    g = nk.parse(text)
    assert str(g) == text
    return g


def test_documented_example_round_trips_and_matches_the_builder():
    g = _roundtrip(SOFTMAX)
    b = nk.Builder("softmax")
    x = b.add_input("x", (256, 512), nk.float32)
    m = b.max(x, axis=-1, keepdims=True)
    e = b.exp(x - m)
    b.set_outputs({"y": e / b.sum(e, axis=1, keepdims=True)})
    assert str(b.graph) == SOFTMAX
    assert [op.name for op in g.ops][-1] == "return"


def test_comments_and_blank_space_are_ignored():
    noisy = "// leading comment\n\ngraph @softmax(%x: tensor<256x512xf32>) {   // sig\n" + SOFTMAX.split(
        "{\n", 1
    )[1].replace("\n  %sub", "  // mid\n\n  %sub")
    assert str(nk.parse(noisy)) == SOFTMAX


@pytest.mark.parametrize("d", nk.ALL_DTYPES, ids=str)
def test_every_dtype_round_trips_in_types_and_constants(d):
    b = nk.Builder("dt")
    x = b.add_input("x", (2, 0, 3), d)
    s = b.add_input("s", (), d)
    rng = np.random.default_rng(1)
    arr = (rng.random((2, 3)) < 0.5) if d.is_bool else rng.integers(0, 5, (2, 3)).astype(d.np_dtype)
    c = b.constant(arr, d)
    f = b.full((4,), True if d.is_bool else 3, d)
    b.set_outputs({"x": x, "s": s, "c": c, "f": f})
    text = str(b.graph)
    assert f"tensor<2x0x3x{d.name}>" in text and f"tensor<{d.name}>" in text
    assert f"dense<2x3x{d.name}, " in text
    g = _roundtrip(text)
    got = g.outputs["c"].owner.attrs["value"]
    assert got.dtype is d and got.array.tobytes() == c.owner.attrs["value"].array.tobytes()


SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-06, 1e20, 0.1, -2.5, 5e-324, 1.7976931348623157e308]


@pytest.mark.parametrize("d", [d for d in nk.ALL_DTYPES if d.is_float], ids=str)
def test_special_floats_in_constants_and_full_values_are_bit_exact(d):
    b = nk.Builder("special")
    with np.errstate(over="ignore"):
        arr = np.array(SPECIAL).astype(np.float32 if d is nk.tfloat32 else d.np_dtype)
    c = b.constant(arr, d)
    outs = {"c": c}
    for k, v in enumerate([np.nan, np.inf, -np.inf, -0.0, 1e-06, 0.1]):
        outs[f"f{k}"] = b.full((2,), float(v), d)
    b.set_outputs(outs)
    g = _roundtrip(str(b.graph))
    got = g.outputs["c"].owner.attrs["value"].array
    assert got.tobytes() == c.owner.attrs["value"].array.tobytes()
    for k, v in enumerate([np.nan, np.inf, -np.inf, -0.0, 1e-06, 0.1]):
        val = g.outputs[f"f{k}"].owner.attrs["value"]
        assert isinstance(val, float)
        same = val == v and math.copysign(1, val) == math.copysign(1, v)
        assert same or (math.isnan(val) and math.isnan(v))
    r = nk.run(g, {})
    assert np.signbit(r["f3"]).all() and np.isnan(r["f0"]).all()


def test_float_attribute_text_forms():
    b = nk.Builder("f")
    b.set_outputs(
        {
            "a": b.full((), 1e-06, nk.float32),
            "b": b.full((), 1.0, nk.float32),
            "c": b.full((), float("-inf"), nk.float32),
            "d": b.full((), 2**70, nk.float32),
            "e": b.full((), -7, nk.int8),
            "t": b.full((), True, nk.bool_),
        }
    )
    text = str(b.graph)
    for frag in [
        "{value = 1e-06}",
        "{value = 1.0}",
        "{value = -inf}",
        "{value = 1.1805916207174113e+21}",
        "{value = -7}",
        "{value = true}",
    ]:
        assert frag in text, frag
    _roundtrip(text)


def test_default_attributes_are_omitted_and_declaration_order_kept():
    b = nk.Builder("attrs")
    x = b.add_input("x", (2, 3), nk.float32)
    b.set_outputs({"a": b.sum(x, axis=0), "v": b.var(x, axis=(0, 1), keepdims=True, ddof=1)})
    text = str(b.graph)
    assert "tensor.reduce %x {axes = [0], kind = sum} : tensor<3xf32>" in text
    assert "{axes = [0, 1], kind = var, keepdims = true, ddof = 1}" in text
    _roundtrip(text)


def test_value_names_are_unique_hints_or_numbers():
    text = """\
graph @names(%x: tensor<2xf32>, %exp_1: tensor<2xf32>) {
  %exp = tensor.exp %x : tensor<2xf32>
  %0 = tensor.exp %exp : tensor<2xf32>
  %1 = tensor.add %0, %exp_1 : tensor<2xf32>
  return exp = %1, x = %x
}
"""
    g = _roundtrip(text)
    b = nk.Builder("names")
    x = b.add_input("x", (2,), nk.float32)
    x1 = b.add_input("exp_1", (2,), nk.float32)
    e1 = b.exp(x)
    e2 = b.exp(e1)
    e2.name_hint = None
    s = e2 + x1
    s.name_hint = None
    b.set_outputs({"exp": s, "x": x})
    assert str(b.graph) == text
    # colliding hints get _1, _2 ... skipping names already taken
    b2 = nk.Builder("dup")
    y = b2.add_input("y", (2,), nk.float32)
    b2.set_outputs({"o": b2.exp(b2.exp(b2.exp(y)))})
    assert "%exp = " in str(b2.graph) and "%exp_1 = " in str(b2.graph) and "%exp_2 = " in str(b2.graph)
    assert len(g.ops) == 4


def test_printing_is_deterministic():
    def build():
        b = nk.Builder("det")
        x = b.add_input("x", (3, 4), nk.bfloat16)
        w = b.constant(np.arange(12, dtype=np.float32).reshape(4, 3) / 3)
        h = b.gelu(x @ w.astype(nk.bfloat16))
        b.set_outputs({"y": b.mean(h, axis=-1), "z": h[::-1, None]})
        return b.graph

    t1, t2 = str(build()), str(build())
    assert t1 == t2 == str(nk.parse(t1)) == nk.print_graph(build())


def test_graph_without_inputs_and_ops_round_trips():
    _roundtrip("graph @empty() {\n  return\n}\n")
    _roundtrip("graph @id(%x: tensor<f32>) {\n  return x = %x, y = %x\n}\n")


@pytest.mark.parametrize("s", ["plain", 'quo"te', "back\\slash", "tab\tnew\nline", "\x01\x7f", "ünï"])
def test_string_literals_round_trip_through_the_lexer(s):
    tok = Lexer(quote_string(s)).next()
    assert tok.kind == "string" and tok.value == s


def test_dense_literal_is_little_endian_hex():
    b = nk.Builder("le")
    b.set_outputs({"c": b.constant(np.array([1.0, 2.0], ml_dtypes.bfloat16))})
    assert 'dense<2xbf16, "803f0040">' in str(b.graph)
