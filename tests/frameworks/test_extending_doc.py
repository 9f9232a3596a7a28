"""Every Python block of docs/extending.md runs as written (each block is self-contained and
checks its own results with asserts). A block preceded by a ``*needs jax*`` / ``*needs torch*``
line runs only where that package imports (importorskip)."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "extending.md"
_BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)
_NEEDS = re.compile(r"^\*needs (\w+)\*$", re.M)


def blocks():
    text = DOC.read_text()
    out, prev = [], 0
    for m in _BLOCK.finditer(text):
        needs = _NEEDS.findall(text[prev : m.start()])
        prev = m.end()
        if m.group(1) == "python":
            line = text.count("\n", 0, m.start()) + 1
            out.append(pytest.param(m.group(2), needs, id=f"line{line}"))
    return out


def test_the_doc_has_its_blocks():
    kinds = [p.values[1] for p in blocks()]
    assert kinds == [[], [], ["jax"], ["torch"]]


@pytest.mark.parametrize("code, needs", blocks())
def test_block_runs(code, needs):
    for pkg in needs:
        pytest.importorskip(pkg)
    exec(compile(code, str(DOC), "exec"), {"__name__": "extending_doc"})
