"""Bad IR text -> ParseError at the right line:column saying what was expected; well-formed
text that breaks an op rule -> VerifyError printing the op."""

import pytest

import nkigen_lite as nk

HEAD = "graph @g(%x: tensor<2xf32>) {\n"
TAIL = "  return y = %x\n}\n"


def _op(line):
    """A graph whose second line is ``line``."""
    return HEAD + line + "\n" + TAIL


# (text, line, column, message fragment) -- columns are 1-based, counted by hand
CASES = [
    ("", 1, 1, "expected 'graph', found end of input"),
    ("grph @g() {\n}\n", 1, 1, "expected 'graph', found 'grph'"),
    ("graph g() {\n}\n", 1, 7, "expected a graph name like @main, found 'g'"),
    ("graph @g(%x tensor<2xf32>) {\n}\n", 1, 13, "expected ':', found 'tensor'"),
    ("graph @g(x: tensor<2xf32>) {\n}\n", 1, 10, "expected an input like %x, found 'x'"),
    ("graph @g(%x: tensr<2xf32>) {\n}\n", 1, 14, "unknown type 'tensr'"),
    ("graph @g(%x: tensor<2xf64>) {\n}\n", 1, 14, "bad tensor type"),
    ("graph @g(%x: tensor<2x-1xf32>) {\n}\n", 1, 14, "bad tensor type"),
    ("graph @g(%x: tensor<2xf32) {\n}\n", 1, 21, "missing '>' to close '<'"),
    ("graph @g(%x: tensor<f32>, %x: tensor<f32>) {\n}\n", 1, 27, "duplicate input name 'x'"),
    ("graph @g() {\n", 2, 1, "expected '}' to close the graph"),
    ("graph @g() {\n  return\n}\nxyz", 4, 1, "unexpected 'xyz' after the graph"),
    (_op("  %y = tensor.exp %z : tensor<2xf32>"), 2, 19, "use of undefined value %z"),
    (_op("  %y = tensor.foo %x : tensor<2xf32>"), 2, 8, "unknown op 'tensor.foo'"),
    (_op("  %x = tensor.exp %x : tensor<2xf32>"), 2, 3, "redefinition of %x"),
    (_op("  %a, %b = tensor.exp %x : tensor<2xf32>"), 2, 12, "2 result names but 1 result types"),
    (_op("  %y = tensor.exp %x"), 2, 8, "1 result names but 0 result types"),
    (
        _op("  %y = tensor.reduce %x {axes = [0], kind = median} : tensor<f32>"),
        2,
        8,
        "attribute 'kind': expected one of sum",
    ),
    (
        _op("  %y = tensor.reduce %x {axes = [0], axes = [0]} : tensor<f32>"),
        2,
        38,
        "attribute 'axes' given twice",
    ),
    (
        _op("  %y = tensor.reduce %x {axes = 0, kind = sum} : tensor<f32>"),
        2,
        8,
        "attribute 'axes': expected a list of an integer",
    ),
    (
        _op("  %y = tensor.reduce %x {axes = [0] kind = sum} : tensor<f32>"),
        2,
        37,
        "expected '}', found 'kind'",
    ),
    (_op("  %y = tensor.reduce %x {axes = } : tensor<f32>"), 2, 33, "expected an attribute value, found '}'"),
    (_op("  %y = tensor.full {value = -foo} : tensor<f32>"), 2, 30, "expected a number after '-'"),
    (_op('  %y = tensor.reduce %x {axes = [0], kind = "sum} : tensor<f32>'), 2, 45, "unterminated string"),
    (_op("  %y = tensor.exp %x ; : tensor<2xf32>"), 2, 22, "unexpected character ';'"),
    (_op("  % = tensor.exp %x : tensor<2xf32>"), 2, 3, "expected a name after '%'"),
    (_op('  %y = tensor.constant {value = dense<2xf32, "zz">} : tensor<2xf32>'), 2, 33, "bad dense literal"),
    (
        _op('  %y = tensor.constant {value = dense<2xf32 "00">} : tensor<2xf32>'),
        2,
        33,
        'expected dense<SHAPExDTYPE, "hex">',
    ),
    (
        _op('  %y = tensor.constant {value = dense<2xf32, "0000">} : tensor<2xf32>'),
        2,
        8,
        "dense literal holds 2 bytes, expected 8",
    ),
    (_op("  %y = tensor.exp %x : tensor<2xf32> : tensor<2xf32>"), 2, 38, "expected an op name, found ':'"),
    (
        _op("  %y = tensor.exp %x {value = " + "[" * 70 + "]" * 70 + "} : tensor<2xf32>"),
        2,
        95,
        "nesting deeper than 64 levels",
    ),
    (_op("  %y = tensor.exp %x : tensor<²xf32>"), 2, 24, "bad tensor type"),
    (_op("  %é = tensor.exp %x : tensor<2xf32>"), 2, 3, "expected a name after '%'"),
    (_op("  %y = tensor.exp %x {bad = 1} : tensor<2xf32>"), 2, 8, "tensor.exp: unknown attribute 'bad'"),
    (_op("  %y = tensor.cast %x {dtype = f64} : tensor<2xf32>"), 2, 8, "attribute 'dtype': expected a dtype"),
    ("graph @g(%x: tensor<2xf32>) {\n  return y = %x, z\n}\n", 3, 1, "expected '=', found '}'"),
]


@pytest.mark.parametrize("text,line,col,fragment", CASES)
def test_parse_error_position_and_message(text, line, col, fragment):
    with pytest.raises(nk.ParseError) as info:
        nk.parse(text)
    e = info.value
    assert fragment in e.reason, e.reason
    assert (e.line, e.col) == (line, col), f"{e} (expected {line}:{col})"
    assert str(e).startswith(f"{line}:{col}: ")


def test_wellformed_text_breaking_an_op_rule_is_a_verify_error():
    with pytest.raises(
        nk.VerifyError,
        match=r"tensor.exp: result type is tensor<3xf32> but the "
        r"operands give tensor<2xf32>\n  at: %y = tensor.exp %x : tensor<3xf32>",
    ):
        nk.parse(_op("  %y = tensor.exp %x : tensor<3xf32>"))
    with pytest.raises(nk.VerifyError, match="tensor.full: value 1 is not a float for float32"):
        nk.parse(_op("  %y = tensor.full {value = 1} : tensor<f32>"))
    with pytest.raises(nk.VerifyError, match="must end with a return op"):
        nk.parse("graph @g(%x: tensor<2xf32>) {\n  %y = tensor.exp %x : tensor<2xf32>\n}\n")
    with pytest.raises(nk.VerifyError, match="return must be the last op"):
        nk.parse("graph @g(%x: tensor<2xf32>) {\n  return y = %x\n  return z = %x\n}\n")
    with pytest.raises(nk.VerifyError, match="return: duplicate output names"):
        nk.parse("graph @g(%x: tensor<2xf32>) {\n  return y = %x, y = %x\n}\n")
    with pytest.raises(nk.VerifyError, match="return: must not have results"):
        nk.parse("graph @g(%x: tensor<2xf32>) {\n  %a = return y = %x : tensor<2xf32>\n}\n")


def test_parse_without_verify_returns_the_graph():
    g = nk.parse(_op("  %y = tensor.exp %x : tensor<3xf32>"), verify=False)
    with pytest.raises(nk.VerifyError):
        g.verify()
