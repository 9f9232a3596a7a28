"""Every Python and shell block in README.md, docs/ and examples/ runs as written.

The runnable blocks of one file run in order, in one namespace and one scratch folder (as a
reader pasting them one after the other into a checkout would). The scratch folder links the
checkout's files (so ``nkigen-lite compile examples/...`` works, and files a block writes stay
out of the checkout) and is the working directory of both kinds of
block; shell blocks run with ``bash -e`` and this environment's ``nkigen-lite`` first on PATH;
the jit disk cache points into the scratch folder. A block marked ``<!-- not run: REASON -->``
is skipped with its reason; that set is pinned below so it cannot grow unnoticed.
"""

import contextlib
import io
import linecache
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nkigen_lite.ir.registry import scratch_tables
from nkigen_lite.tensor.builder import Builder
from tests.docs.doc_blocks import ROOT, RUN_LANGS, Block, blocks, markdown_files

# (file, reason) of every block that is deliberately not run. Keep this tiny.
NOT_RUN = {
    ("README.md", "installs uv and runs the whole test suite"),
    ("docs/extending.md", "installs packages"),
    (
        "docs/emit.md",
        "the emitted module itself (imports the Neuron SDK); "
        "tests/docs/test_doc_outputs.py checks it is what is emitted today",
    ),
    ("docs/emit.md", "needs the Neuron SDK and a Trainium device"),
    ("docs/emit.md", "installs the Neuron SDK from the Neuron repository"),
}


# What the scratch folder links from the checkout (blocks that say `examples/...` or `tests/...`).
CHECKOUT_VIEW = ("pyproject.toml", "nkigen_lite", "tests", "examples", "benchmarks", "docs", "README.md")


def _runnable(path: Path) -> list[Block]:
    return [b for b in blocks(path) if b.lang in RUN_LANGS]


_ALL = [b for f in markdown_files() for b in _runnable(f)]


class _FileSession:
    """The namespace and scratch folder shared by one Markdown file's blocks, and how many of
    them have run."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.namespace: dict = {"__name__": "__main__"}
        self.done = 0
        for name in CHECKOUT_VIEW:  # a view of the checkout: blocks read it, their files stay here
            if (ROOT / name).exists():
                (scratch / name).symlink_to(ROOT / name)
        # Ops, rules and Builder methods a doc registers (docs/adding_an_op.md) live only while
        # its blocks run: the registries are scratch copies until close().
        self._tables = scratch_tables()
        self._tables.__enter__()
        self._builder = set(vars(Builder))

    def close(self) -> None:
        for name in set(vars(Builder)) - self._builder:
            delattr(Builder, name)
        self._tables.__exit__(None, None, None)


@pytest.fixture(scope="module")
def sessions():
    opened: dict = {}
    yield opened
    for s in opened.values():
        s.close()


def _session(block: Block, index: int, sessions: dict, tmp_path_factory) -> _FileSession:
    """The session of block's file, ready to run block ``index`` (earlier files' sessions closed)."""
    for path in [p for p in sessions if p != block.path]:
        sessions.pop(path).close()
    s = sessions.get(block.path)
    if s is None or s.done > index:
        if s is not None:
            s.close()
        s = sessions[block.path] = _FileSession(tmp_path_factory.mktemp("doc"))
    return s


def _env(scratch: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["NKIGEN_LITE_CACHE"] = str(scratch / ".nk_cache")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["UV_PROJECT"] = str(ROOT)  # `uv run ...` in a block runs in this checkout's environment
    return env


def _run_python(block: Block, s: _FileSession) -> None:
    filename = f"<{block.where}>"
    # Pad so tracebacks give the line in the Markdown file; register the text so inspect and
    # tracebacks can show it.
    src = "\n" * block.line + block.source
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    code = compile(src, filename, "exec")
    old = os.getcwd()
    os.chdir(s.scratch)
    sys.path.insert(0, str(s.scratch))  # as `python` started in the checkout: `import examples.x`
    old_env = os.environ.get("NKIGEN_LITE_CACHE")
    os.environ["NKIGEN_LITE_CACHE"] = str(s.scratch / ".nk_cache")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, s.namespace)
    finally:
        sys.path.remove(str(s.scratch))
        os.chdir(old)
        if old_env is None:
            os.environ.pop("NKIGEN_LITE_CACHE", None)
        else:
            os.environ["NKIGEN_LITE_CACHE"] = old_env


def _run_shell(block: Block, s: _FileSession) -> None:
    r = subprocess.run(
        ["bash", "-e", "-c", block.source],
        cwd=s.scratch,
        env=_env(s.scratch),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, f"{block.where}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"


def _run(block: Block, s: _FileSession) -> None:
    if block.not_run is not None:
        return
    (_run_python if block.lang == "python" else _run_shell)(block, s)


@pytest.mark.parametrize("block", _ALL, ids=[b.where for b in _ALL])
def test_block_runs(block: Block, sessions, tmp_path_factory):
    if block.not_run is not None:
        pytest.skip(f"not run: {block.not_run}")
    if block.needs:
        pytest.importorskip(block.needs)
    mine = _runnable(block.path)
    index = mine.index(block)
    s = _session(block, index, sessions, tmp_path_factory)
    for earlier in mine[s.done : index]:  # blocks before this one (when run out of order)
        _run(earlier, s)
    s.done = index
    try:
        _run(block, s)
    finally:
        s.done = index + 1  # the next block runs either way and reports its own error


def test_not_run_set_is_pinned():
    """Blocks marked not-run are exactly the justified ones listed in NOT_RUN."""
    marked = {(str(b.path.relative_to(ROOT)), b.not_run) for b in _ALL if b.not_run is not None}
    assert marked == NOT_RUN


def test_every_doc_has_runnable_or_plain_blocks():
    """The extractor sees the fences: README has Python blocks, and every marked reason is stated."""
    assert any(b.lang == "python" for b in _runnable(ROOT / "README.md"))
    for b in _ALL:
        assert b.not_run is None or b.not_run.strip(), f"{b.where}: not-run marker without a reason"
