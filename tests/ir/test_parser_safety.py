"""The parser never evaluates its input as Python: code-shaped text is a ParseError and nothing
runs, parsing valid text calls no eval/exec/compile, and the IR package uses none of them."""

import ast
import builtins
import os
import pathlib
import re

import pytest

import nkigen_lite as nk


def _payloads(marker: pathlib.Path):
    cmd = f"__import__('os').system('touch {marker}')"
    return [
        cmd,
        f"graph @g() {{\n  {cmd}\n}}\n",
        f"graph @{cmd}() {{\n}}\n",
        f"graph @g(%x: tensor<{cmd}>) {{\n  return y = %x\n}}\n",
        f"graph @g(%x: {cmd}) {{\n  return y = %x\n}}\n",
        f"graph @g(%x: tensor<2xf32>) {{\n  %y = tensor.exp %x {{value = {cmd}}} : tensor<2xf32>\n"
        "  return y = %y\n}\n",
        f'graph @g(%x: tensor<2xf32>) {{\n  %y = tensor.reduce %x {{axes = [0], kind = "{cmd}"}}'
        " : tensor<f32>\n  return y = %y\n}\n",
        f'graph @g(%x: tensor<2xf32>) {{\n  %y = tensor.constant {{value = dense<2xf32, "{cmd}">}}'
        " : tensor<2xf32>\n  return y = %y\n}\n",
        f"graph @g(%x: tensor<2xf32>) {{\n  return y = %x, {cmd} = %x\n}}\n",
        'graph @g() {\n  %y = tensor.full {value = eval("1+1")} : tensor<f32>\n  return y = %y\n}\n',
        "graph @g() {\n  %y = tensor.full {value = (lambda: 1)()} : tensor<f32>\n  return y = %y\n}\n",
        "graph @g() {\n  %y = tensor.full {value = 1 + 1} : tensor<f32>\n  return y = %y\n}\n",
        "graph @g() {\n  %y = tensor.full {value = __builtins__} : tensor<f32>\n  return y = %y\n}\n",
        "graph @g(%x: tensor<2xf32>) {\n  %y = tensor.cast %x {dtype = __import__} : tensor<2xf32>\n"
        "  return y = %y\n}\n",
        "graph @g(%x: tensor<2x(3,)f4>) {\n  return y = %x\n}\n",
        "graph @g(%x: tensor<1)xf16>) {\n  return y = %x\n}\n",
        "graph @g(%x: tensor<2xf4,i4>) {\n  return y = %x\n}\n",
        'graph @g() {\n  %y = tensor.constant {value = dense<2x(2,)f4, "00">} : tensor<2xf32>\n'
        "  return y = %y\n}\n",
    ]


@pytest.fixture
def no_eval(monkeypatch):
    """Record every call of eval/exec/compile and ast.literal_eval/ast.parse during a test
    (calls still go through, so pytest's own failure reporting keeps working)."""
    calls = []

    def spy(owner, name, label):
        real = getattr(owner, name)

        def fn(*args, **kwargs):
            calls.append(label)
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, fn)

    for name in ("eval", "exec", "compile"):
        spy(builtins, name, name)
    for name in ("literal_eval", "parse"):  # NumPy reads some dtype strings with these
        spy(ast, name, f"ast.{name}")
    return calls


def test_code_shaped_text_is_rejected_and_never_executed(tmp_path, no_eval, monkeypatch):
    marker = tmp_path / "pwned"
    ran = []
    monkeypatch.setattr(os, "system", lambda *a: ran.append(a) or 0)
    for text in _payloads(marker):
        with pytest.raises((nk.ParseError, nk.VerifyError)):
            nk.parse(text)
    assert not marker.exists() and ran == [] and no_eval == []


def test_parsing_valid_text_calls_no_evaluator(no_eval):
    b = nk.Builder("ok")
    x = b.add_input("x", (2, 3), nk.bfloat16)
    b.set_outputs({"y": b.sum(b.exp(x) * 2.0, axis=-1), "c": b.constant([[1.5, -0.0, 2.0]]) + x})
    text = str(b.graph)
    assert str(nk.parse(text)) == text and no_eval == []


def test_ir_package_source_uses_no_evaluator():
    root = pathlib.Path(nk.__file__).parent / "ir"
    banned = re.compile(
        r"(?<![\w.])(eval|exec|compile|__import__)\s*\(|\b(literal_eval|pickle|marshal)\b"
        r"|^\s*(import|from) ast\b"
    )
    offenders = [
        f"{p.name}:{i}"
        for p in sorted(root.glob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if banned.search(line.split("#", 1)[0])
    ]
    assert offenders == []
