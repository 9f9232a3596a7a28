"""Large texts: dense constants round-trip through NumPy bytes, print elided for reading, and
long attribute lists parse; positions after them stay right."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.printer import ELIDE_DENSE_BYTES


def _const_graph(a: np.ndarray):
    b = nk.Builder("c")
    x = b.add_input("x", a.shape, nk.float32)
    b.set_outputs({"y": x + b.constant(a)})
    return b.graph


def test_a_large_constant_round_trips_bit_exactly():
    a = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    a[0, :4] = [np.nan, np.inf, -0.0, 1e-45]
    g = _const_graph(a)
    text = str(g)
    g2 = nk.parse(text)
    assert str(g2) == text
    got = next(op for op in g2.body if op.name == "tensor.constant").attrs["value"].array
    assert got.tobytes() == a.tobytes()


def test_errors_after_a_constant_name_the_right_line_and_column():
    text = str(_const_graph(np.arange(4096, dtype=np.float32).reshape(64, 64))).splitlines()
    text.insert(3, "  %z = tensor.exp %nope : tensor<64x64xf32>")
    with pytest.raises(nk.ParseError) as e:
        nk.parse("\n".join(text) + "\n")
    assert "4:19" in str(e.value) and "%nope" in str(e.value)


def test_reading_form_elides_large_constants_and_does_not_parse():
    big = _const_graph(np.arange(4096, dtype=np.float32).reshape(64, 64))
    shown = big.format()
    assert "dense<64x64xf32, __elided__>" in shown and len(shown) < 1000
    assert big.format(elide_constants=False) == str(big)
    with pytest.raises(nk.ParseError, match="elided"):
        nk.parse(shown)
    small = _const_graph(np.arange(8, dtype=np.float32).reshape(2, 4))
    assert 2 * 4 * 4 <= ELIDE_DENSE_BYTES and small.format() == str(small)


def test_an_op_error_message_does_not_carry_a_large_constant():
    g = _const_graph(np.arange(128 * 128, dtype=np.float32).reshape(128, 128))
    c = next(op for op in g.body if op.name == "tensor.constant")
    assert len(repr(c)) < 300 and "__elided__" in repr(c)


def test_long_integer_lists_parse_like_short_ones():
    perm = list(range(50_000))
    text = (
        "graph @g(%x: tensor<4xf32>) {\n"
        f"  %y = tensor.transpose %x {{perm = [ {' ,  '.join(map(str, perm))} ]}} "
        ": tensor<4xf32>\n  return y = %y\n}\n"
    )
    with pytest.raises(nk.VerifyError, match="perm"):
        nk.parse(text)
    ok = (
        "graph @g(%x: tensor<2x3xf32>) {\n"
        "  %y = tensor.transpose %x {perm = [ 1 ,0]} : tensor<3x2xf32>\n  return y = %y\n}\n"
    )
    g = nk.parse(ok)
    assert next(iter(g.body)).attrs["perm"] == (1, 0)
    neg = ok.replace("[ 1 ,0]", "[-1, 0]")
    with pytest.raises(nk.VerifyError, match="perm"):
        nk.parse(neg)
