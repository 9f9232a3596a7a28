"""Lint in the test suite: ruff over the package and the tests with the project's rule set
(pyproject.toml): pyflakes / pycodestyle / bugbear / pyupgrade, import order (I), unused
arguments (ARG), McCabe complexity at most 15 (C901), and the `ruff format` check. Skipped
only when ruff is not installed (it is in the dev dependency group, so ``uv run pytest`` runs
it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ruff() -> list[str] | None:
    try:
        import ruff  # noqa: F401  (the PyPI package ships the binary)
    except ImportError:
        exe = shutil.which("ruff")
        return [exe] if exe else None
    return [sys.executable, "-m", "ruff"]


def _config() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]


def test_the_rule_set_keeps_complexity_unused_arguments_and_import_order():
    lint = _config()
    assert {"C901", "ARG", "I"} <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] <= 15
    ignored = lint.get("per-file-ignores", {})
    package_ignores = {k: v for k, v in ignored.items() if k.startswith("nkigen_lite")}
    # no exemptions in the package (tests may ignore ARG for fixtures)
    assert not package_ignores, package_ignores


def _run_ruff(*args: str) -> subprocess.CompletedProcess:
    """Run ruff from the repository root (skips the test when ruff is not installed)."""
    cmd = _ruff()
    if cmd is None:
        pytest.skip("ruff is not installed (uv sync --group dev)")
    return subprocess.run([*cmd, *args], cwd=REPO, capture_output=True, text=True)


def test_ruff_finds_nothing_in_the_package_and_the_tests():
    res = _run_ruff("check", "--no-cache", "--output-format", "concise", "nkigen_lite", "tests")
    assert res.returncode == 0, f"ruff check failed:\n{res.stdout}{res.stderr}"


def test_ruff_format_leaves_the_package_and_the_tests_unchanged():
    res = _run_ruff("format", "--check", "--no-cache", "nkigen_lite", "tests", "benchmarks")
    assert res.returncode == 0, f"ruff format --check failed (run `uv run ruff format`):\n{res.stdout}"
