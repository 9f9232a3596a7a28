"""The lowering package's modules import one another without a cycle, and only at module top
level (a function-level import is how a cycle hides): the tile frame (frame.py) sits below the
tile-level rules, which sit below the group emitter."""

from __future__ import annotations

import ast
from pathlib import Path

import nkigen_lite.transforms.lower as lower_pkg

PKG = Path(lower_pkg.__file__).parent


def _sibling_imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, sibling module, at top level?) for every ``from .x import`` / ``from . import x``."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            out += [(node.lineno, n, id(node) in top) for n in names]
    return out


def _graph(pkg: Path = PKG) -> dict[str, set[str]]:
    return {p.stem: {n for _, n, _ in _sibling_imports(p)} for p in sorted(pkg.glob("*.py"))}


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    cycles = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                cycles.append(" -> ".join(path[path.index(n) :] + [n]))
            elif n in graph and n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


def test_no_function_level_imports_between_lowering_modules():
    nested = [
        f"transforms/lower/{p.name}:{line} imports .{n} inside a function"
        for p in sorted(PKG.glob("*.py"))
        for line, n, at_top in _sibling_imports(p)
        if not at_top
    ]
    assert nested == []


def test_lowering_modules_import_without_a_cycle():
    assert _cycles(_graph()) == []


def test_the_checks_see_a_cycle_and_a_nested_import(tmp_path):
    (tmp_path / "a.py").write_text("from .b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import y\n")
    assert _sibling_imports(tmp_path / "b.py") == [(2, "a", False)]
    assert _cycles(_graph(tmp_path)) == ["a -> b -> a"]


def test_the_tile_rules_depend_on_the_frame_not_the_group_emitter():
    graph = _graph()
    for rule in ("elementwise", "reduce", "select", "sources", "tile_common", "tile_ops", "fold"):
        assert "frame" in graph[rule] or rule == "tile_ops", rule
        assert "group_emit" not in graph[rule], rule
