"""Every Python block of docs/parallel.md runs as written (each block checks its own results)."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "parallel.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def blocks():
    text = DOC.read_text()
    return [
        pytest.param(m.group(1), id=f"line{text.count(chr(10), 0, m.start()) + 1}")
        for m in _BLOCK.finditer(text)
    ]


def test_the_doc_has_blocks():
    assert len(blocks()) >= 1


@pytest.mark.parametrize("code", blocks())
def test_block_runs(code):
    exec(compile(code, str(DOC), "exec"), {"__name__": "parallel_doc"})
