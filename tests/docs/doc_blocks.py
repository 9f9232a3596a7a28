"""Find the code blocks of the project's Markdown files (README.md, docs/**/*.md, examples/**/*.md).

A block is a fenced region (```LANG ... ```). ``python`` blocks are executed, in order, in one
namespace per file (a later block may use names an earlier one made); ``sh`` blocks are run with
bash. Every other language (``text``, none) is output or syntax shown, never run.

A block that must not run carries a marker on the line right above its fence::

    <!-- not run: REASON -->

The reason must be stated (it is rendered nowhere, so it costs the reader nothing). A block
whose last non-blank line above reads ``*needs PKG*`` (shown to the reader) runs only where
PKG imports.
"""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN_LANGS = ("python", "sh")
_FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.S | re.M
)
_MARK = re.compile(r"<!--\s*not run:\s*(?P<why>.*?)\s*-->\s*$")
_NEEDS = re.compile(r"^\*needs (?P<pkg>[\w.]+)\*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: file, 1-based line of its opening fence, language, source, and the
    stated reason it is not run (None when it runs)."""

    path: Path
    line: int
    lang: str
    source: str
    not_run: str | None
    needs: str | None = None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def markdown_files() -> list[Path]:
    """README.md plus every Markdown file under docs/ and examples/, sorted (new files are picked
    up without touching the test)."""
    files = [ROOT / "README.md"]
    for sub in ("docs", "examples"):
        files += sorted((ROOT / sub).rglob("*.md"))
    return [f for f in files if f.exists()]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, in order."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        needs = _NEEDS.match(before.strip())
        body = m.group("body")
        indent = len(m.group("indent"))
        if indent:
            body = "\n".join(ln[indent:] for ln in body.split("\n"))
        out.append(
            Block(
                path,
                line,
                m.group("lang"),
                body,
                mark.group("why") if mark else None,
                needs.group("pkg") if needs else None,
            )
        )
    return out
